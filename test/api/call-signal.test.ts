import { describe, expect, it } from 'vitest';
import { CallAbort } from '../../src/api/call-signal.js';

describe('CallAbort', () => {
  it('aborts once, with its reason, running every listener once in the order added', () => {
    const abort = new CallAbort();
    const ran: string[] = [];
    abort.signal.addEventListener('abort', () => ran.push('a'), { once: true });
    abort.signal.addEventListener('abort', () => ran.push('b'));
    abort.signal.addEventListener('abort', () => ran.push('c'));
    expect(abort.signal.aborted).toBe(false);
    expect(abort.signal.reason).toBeUndefined();
    const reason = new Error('first');
    abort.abort(reason);
    abort.abort(new Error('second'));
    expect(ran).toEqual(['a', 'b', 'c']);
    expect(abort.signal.aborted).toBe(true);
    expect(abort.signal.reason).toBe(reason);
  });

  it('never runs a listener removed before the abort, nor one added after it', () => {
    const abort = new CallAbort();
    const ran: string[] = [];
    const one = (): void => void ran.push('one');
    const two = (): void => void ran.push('two');
    const three = (): void => void ran.push('three');
    abort.addEventListener('abort', one);
    abort.removeEventListener('abort', one);
    abort.addEventListener('abort', two);
    abort.addEventListener('abort', three);
    abort.removeEventListener('abort', two);
    abort.removeEventListener('abort', two);
    abort.abort('why');
    abort.addEventListener('abort', one);
    abort.abort('again');
    expect(ran).toEqual(['three']);
  });

  it('a listener that throws does not keep the others from running; its error is reported as uncaught', async () => {
    const abort = new CallAbort();
    const ran: string[] = [];
    abort.addEventListener('abort', () => {
      throw new Error('listener failed');
    });
    abort.addEventListener('abort', () => ran.push('after'));
    const uncaught = new Promise<unknown>((resolve) => {
      const listeners = process.listeners('uncaughtException');
      process.removeAllListeners('uncaughtException');
      process.once('uncaughtException', (error) => {
        for (const listener of listeners) process.on('uncaughtException', listener);
        resolve(error);
      });
    });
    abort.abort('why');
    expect(ran).toEqual(['after']);
    expect(((await uncaught) as Error).message).toBe('listener failed');
  });
});
