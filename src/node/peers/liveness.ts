/**
 * Node-level liveness, one signal per peer instead of one per group: this node sends each peer it
 * sent nothing to for a third of an election timeout a node heartbeat (an empty Raft frame,
 * raft-wire.ts; so a silent peer misses at least two before it is reported), and notes every frame
 * a peer sends. A peer silent for a whole election timeout
 * (in this node's ticks) is reported once, so the driver wakes the quiesced groups it leads: they
 * run their election timers again and campaign. Awake groups keep their own Raft heartbeats; this
 * only covers the groups that stopped them (quiescence).
 *
 * Safety does not rest on this room: a wrong "silent" only wakes groups (more ticks, perhaps a
 * pre-vote that the group's followers refuse while they hear their leader), and a missed one only
 * delays an election.
 */
export class PeerLiveness {
  /** The node tick at which each peer was last heard (any frame). */
  private readonly lastHeard = new Map<number, number>();
  /** The node tick at which a frame last went to each peer. */
  private readonly lastSent = new Map<number, number>();
  private readonly heartbeatEveryTicks: number;
  /** Peers reported silent and not heard since (each silence is reported once). */
  private readonly silent = new Set<number>();
  /** Peers a frame ever came from (heard() says when the first one did). */
  private readonly everHeard = new Set<number>();
  /** Node heartbeats sent (tests, metrics). */
  heartbeatsSent = 0;

  constructor(
    private readonly peers: number[],
    /** Ticks of silence after which a peer is reported (the election timeout). */
    private readonly silenceTicks: number,
  ) {
    for (const peer of peers) this.lastHeard.set(peer, 0);
    this.heartbeatEveryTicks = Math.max(1, Math.floor(silenceTicks / 3));
  }

  /** A member joined (membership.ts): it is heartbeated and watched from now on. */
  addPeer(peer: number, nowTick: number): void {
    if (this.lastHeard.has(peer)) return;
    this.peers.push(peer);
    this.lastHeard.set(peer, nowTick);
  }

  /** A member was removed: no more heartbeats to it, no silence reports about it. */
  dropPeer(peer: number): void {
    const at = this.peers.indexOf(peer);
    if (at >= 0) this.peers.splice(at, 1);
    this.lastHeard.delete(peer);
    this.lastSent.delete(peer);
    this.silent.delete(peer);
  }

  /** Notes a frame from `peer`; true when it is the first this node ever heard from it. */
  heard(peer: number, nowTick: number): boolean {
    if (!this.lastHeard.has(peer)) return false;
    this.lastHeard.set(peer, nowTick);
    this.silent.delete(peer);
    if (this.everHeard.has(peer)) return false;
    this.everHeard.add(peer);
    return true;
  }

  sent(peer: number, nowTick: number): void {
    this.lastSent.set(peer, nowTick);
  }

  /**
   * One or more node ticks passed (now `nowTick`): calls `heartbeat` for each peer owed one, and
   * returns the peers that fell silent since the last call.
   */
  onTick(nowTick: number, heartbeat: (peer: number) => void): number[] {
    const fellSilent: number[] = [];
    for (const peer of this.peers) {
      if (nowTick - (this.lastSent.get(peer) ?? 0) >= this.heartbeatEveryTicks) {
        heartbeat(peer);
        this.lastSent.set(peer, nowTick);
        this.heartbeatsSent++;
      }
      if (!this.silent.has(peer) && nowTick - (this.lastHeard.get(peer) ?? 0) >= this.silenceTicks) {
        this.silent.add(peer);
        fellSilent.push(peer);
      }
    }
    return fellSilent;
  }
}
