"""Debian's python3-etcd3 (a client nobody here wrote) against one etcd endpoint.

Usage: python3 python_etcd3_client.py HOST PORT

Runs put/get/range/txn/watch/lease/lock calls and prints one JSON object with what each answered,
for test/etcd/python-etcd3.test.ts to compare with what etcd's semantics say. Exits non-zero on an
unexpected exception (the traceback goes to stderr).
"""
import json
import sys
import threading

import etcd3


def text(value):
    return None if value is None else value.decode('utf-8')


def main():
    host, port = sys.argv[1], int(sys.argv[2])
    client = etcd3.client(host=host, port=port, timeout=10)
    out = {}

    # put / get / range / delete
    client.put('py/a', '1')
    client.put('py/b', '2')
    client.put('py/c', '3')
    client.put('other', 'x')
    value, meta = client.get('py/a')
    out['get'] = [text(value), text(meta.key), meta.version]
    out['get_missing'] = text(client.get('py/none')[0])
    out['prefix'] = [[text(meta.key), text(value)] for value, meta in client.get_prefix('py/')]
    out['range'] = [[text(meta.key), text(value)] for value, meta in client.get_range('py/a', 'py/c')]
    out['all_sorted_desc'] = [text(meta.key) for _, meta in client.get_all(sort_order='descend', sort_target='key')]
    out['delete'] = client.delete('py/c')
    out['delete_missing'] = client.delete('py/c')

    # txn with compares
    ok, responses = client.transaction(
        compare=[client.transactions.value('py/a') == '1', client.transactions.version('py/b') > 0],
        success=[client.transactions.put('py/a', '10'), client.transactions.get('py/b')],
        failure=[client.transactions.put('py/failed', 'yes')],
    )
    out['txn_success'] = [ok, [[text(value), text(meta.key)] for value, meta in responses[1]]]
    ok, _ = client.transaction(
        compare=[client.transactions.value('py/a') == '1'],
        success=[client.transactions.put('py/a', 'never')],
        failure=[client.transactions.put('py/failed', 'yes')],
    )
    out['txn_failure'] = [ok, text(client.get('py/a')[0]), text(client.get('py/failed')[0])]

    # watch from a revision: the events after it, in order
    start = client.put('w/start', 's').header.revision
    client.put('w/1', 'one')
    client.put('elsewhere', 'x')
    client.put('w/2', 'two')
    client.delete('w/1')
    events, cancel = client.watch_prefix('w/', start_revision=start + 1)
    seen = []
    for event in events:
        seen.append([type(event).__name__, text(event.key), text(event.value)])
        if len(seen) == 3:
            break
    cancel()
    out['watch'] = seen

    # a live watch: an event written after the watch was created
    live, cancel_live = client.watch('w/live')
    got = []
    reader = threading.Thread(target=lambda: got.append(next(iter(live))))
    reader.start()
    client.put('w/live', 'now')
    reader.join(10)
    cancel_live()
    out['watch_live'] = [text(event.value) for event in got]

    # leases
    lease = client.lease(30)
    client.put('leased/k', 'v', lease=lease)
    out['lease_granted_ttl'] = lease.granted_ttl
    out['lease_keys'] = [text(key) for key in lease.keys]
    out['lease_refresh_ttl'] = lease.refresh()[0].TTL
    out['leased_value_meta_lease'] = client.get('leased/k')[1].lease_id == lease.id
    lease.revoke()
    out['after_revoke'] = text(client.get('leased/k')[0])
    out['revoked_remaining_ttl'] = lease.remaining_ttl

    # locks (python-etcd3's own recipe: a key with a lease, created only if absent)
    first = client.lock('py-lock', ttl=30)
    out['lock_first'] = first.acquire(timeout=5)
    second = client.lock('py-lock', ttl=30)
    # A contended acquire fails its first attempt and goes to the library's retry wait, which
    # Debian's python3-tenacity no longer calls with the signature python3-etcd3 0.12 gives it
    # (TypeError, with etcd as with Atoll): reaching it is the evidence the lock was refused.
    try:
        out['lock_second_while_held'] = second.acquire(timeout=0.5)
    except TypeError:
        out['lock_second_while_held'] = 'refused (retry wait reached)'
    out['lock_first_is_acquired'] = first.is_acquired()
    out['lock_second_is_acquired_while_held'] = second.is_acquired()
    first.release()
    out['lock_second_after_release'] = second.acquire(timeout=5)
    out['lock_second_is_acquired'] = second.is_acquired()
    second.release()

    client.close()
    print(json.dumps(out, sort_keys=True))


if __name__ == '__main__':
    main()
