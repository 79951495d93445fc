// Loaded with NODE_OPTIONS="--require scripts/cpu-prof-hook.cjs" (where --cpu-prof is not allowed):
// profiles the process from start and writes (or after CPU_PROF_STOP_MS) CPU_PROF_DIR/<pid>.cpuprofile on exit. Used by
// scripts/idle-cost.sh PROFILE_DIR.
const inspector = require('node:inspector');
const fs = require('node:fs');
const path = require('node:path');
const dir = process.env.CPU_PROF_DIR;
if (dir && /bin[\\/]atoll-server\.js$/.test(process.argv[1] ?? '')) {
  const session = new inspector.Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 1000 });
  session.post('Profiler.start');
  const from = Number(process.env.CPU_PROF_FROM_MS ?? 0);
  // Optionally restart the profile after CPU_PROF_FROM_MS, to see only the idle phase.
  if (from > 0) setTimeout(() => { session.post('Profiler.stop', () => session.post('Profiler.start')); }, from).unref();
  // Optionally write the profile after CPU_PROF_STOP_MS, for processes that are killed (SIGKILL) rather than exit.
  const stopAt = Number(process.env.CPU_PROF_STOP_MS ?? 0);
  if (stopAt > 0) {
    setTimeout(() => {
      session.post('Profiler.stop', (error, result) => {
        if (!error) fs.writeFileSync(path.join(dir, `${process.pid}.cpuprofile`), JSON.stringify(result.profile));
      });
    }, stopAt).unref();
  }
  process.on('exit', () => {
    session.post('Profiler.stop', (error, result) => {
      if (!error) fs.writeFileSync(path.join(dir, `${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    });
  });
}
