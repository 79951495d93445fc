// What a wakeup costs on this machine, whatever runs: two Node processes play TCP ping-pong with
// 200-byte messages at a fixed rate for 8 s, and each reports its CPU time (user + system, every
// thread) per round trip. The echo side does one read and one write per wakeup, nothing else; the
// other side a timer, a write and a read. At a low rate every message finds its process asleep.
// (docs/performance.md, "The machine".)
//   node scripts/wakeup-cost.mjs [RATES=100,200,1000]   (a timer fires at most every millisecond)
import net from 'node:net';
import { fork } from 'node:child_process';

const seconds = 8;

if (process.argv[2] === '--echo') {
  const server = net.createServer((socket) => socket.on('data', (data) => socket.write(data)));
  server.listen(0, '127.0.0.1', () => process.send?.(server.address().port));
  process.on('message', (message) => {
    if (message === 'cpu') {
      const { user, system } = process.cpuUsage();
      process.send?.({ cpuMs: (user + system) / 1000 });
    } else if (message === 'exit') process.exit(0);
  });
} else {
  const rates = (process.argv[2] ?? '100,200,1000').split(',').map(Number);
  const echo = fork(new URL(import.meta.url).pathname, ['--echo']);
  const port = await new Promise((resolve) => echo.once('message', resolve));
  const socket = net.connect(port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.setNoDelay(true);
  const echoCpuMs = () =>
    new Promise((resolve) => {
      echo.once('message', (message) => resolve(message.cpuMs));
      echo.send('cpu');
    });
  const payload = Buffer.alloc(200);
  let received = 0;
  socket.on('data', (data) => (received += data.length));
  for (const rate of rates) {
    const echo0 = await echoCpuMs();
    const own0 = process.cpuUsage();
    const received0 = received;
    const timer = setInterval(() => socket.write(payload), 1000 / rate);
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
    clearInterval(timer);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const own = process.cpuUsage(own0);
    const echoMs = (await echoCpuMs()) - echo0;
    const trips = Math.round((received - received0) / payload.length);
    const per = (ms) => ((ms * 1000) / trips).toFixed(0);
    console.log(`rate ${rate}/s: ${trips} round trips in ${seconds} s; CPU per round trip: sender ${per((own.user + own.system) / 1000)} us, echo ${per(echoMs)} us`);
  }
  echo.send('exit');
  socket.destroy();
}
