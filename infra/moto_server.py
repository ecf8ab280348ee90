"""moto's DynamoDB/SQS emulator, with every request handled one at a time.

moto's own server is threaded, and its DynamoDB backend does not lock a TransactWriteItems
call against concurrent ones: two racing transactions can both pass their conditions. Real
DynamoDB serializes transactions, and Steward's guarantees (a confirmation spent once, a tool
call applied once) rest on that. Serializing requests here makes the emulator as strict as the
service, so a race test that passes here means something.

It also keeps SQS FIFO deduplication ids for the whole window, as SQS does: moto forgets an id
once its message is deleted, so a late duplicate of a handled message would be enqueued again
within the window. The window is STEWARD_MOTO_SQS_DEDUPE_SECONDS (default 300, SQS's own);
the deployed-shape stage shortens it so a duplicate "after the window" takes seconds.

Its TransactWriteItems backs up every table a transaction touches (a deep copy of the whole
table, once per item of the transaction) so it can roll back a cancelled one. That made each
transaction cost time and memory in proportion to the table: a long stage run slowed to a few
requests a second with moto at 16 GB. Here the backup is of the items the transaction names
only, restored the same way; with requests serialized, that is the same all-or-nothing.

Its Query on a table's own key sorts every item of the table and then keeps the partition asked
for, so each Query cost time in proportion to the table: the 200 x 10 stage run spent 45 % of
moto's time there and slowed to a third of its starting pace. Here a Query on the table's key
reads that one partition (the same items, in the same order); a Query on an index is unchanged.

Usage: python moto_server.py HOST PORT
"""

import os
import sys
import threading

from moto.moto_server.threaded_moto_server import DomainDispatcherApplication, create_backend_app
from moto.moto_server.werkzeug_app import MotoRequestHandler
from werkzeug.serving import run_simple


def remember_dedupe_ids(window_seconds: float) -> None:
    """Makes moto's FIFO queues drop a message whose deduplication id was accepted less than
    `window_seconds` ago, whether or not that message is still in the queue."""
    from moto.sqs import models

    models.DEDUPLICATION_TIME_IN_SECONDS = window_seconds
    original = models.Queue.add_message

    def add_message(self, message):
        dedupe_id = message.deduplication_id
        if self.fifo_queue and dedupe_id:
            seen = self.__dict__.setdefault("_steward_dedupe_ids", {})
            now = message.sent_timestamp / 1000
            for old in [k for k, at in seen.items() if now - at >= window_seconds]:
                del seen[old]
            if dedupe_id in seen:
                return
            seen[dedupe_id] = now
        original(self, message)

    models.Queue.add_message = add_message


def back_up_touched_items_only() -> None:
    """Makes TransactWriteItems roll back by restoring the items it names, instead of copying
    whole tables before every transaction."""
    import copy

    from moto.dynamodb import models
    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.table import Table

    class NoTableCopies:
        """`copy` for the models module: tables are not copied; everything else is."""

        @staticmethod
        def deepcopy(value, memo=None):
            return value if isinstance(value, Table) else copy.deepcopy(value, memo)

        def __getattr__(self, name):
            return getattr(copy, name)

    models.copy = NoTableCopies()
    original = models.DynamoDBBackend.transact_write_items

    def transact_write_items(self, transact_items):
        saved = []
        for entry in transact_items:
            if len(entry) != 1:
                continue  # moto refuses it before any write
            op_type, op = next(iter(entry.items()))
            table = self.tables.get(op.get("TableName"))
            key = op.get("Item") if op_type == "Put" else op.get("Key")
            if table is None or not isinstance(key, dict) or table.hash_key_attr not in key:
                continue
            h = DynamoType(key[table.hash_key_attr])
            r = None
            if table.range_key_attr is not None:
                if table.range_key_attr not in key:
                    continue
                r = DynamoType(key[table.range_key_attr])
            before = table.items.get(h, {}).get(r) if r is not None else table.items.get(h)
            saved.append((table, h, r, copy.deepcopy(before)))
        try:
            return original(self, transact_items)
        except Exception:
            # moto rolls back on every error it raises; put the named items back as they were.
            for table, h, r, before in reversed(saved):
                if r is None:
                    if before is None:
                        table.items.pop(h, None)
                    else:
                        table.items[h] = before
                elif before is None:
                    table.items.get(h, {}).pop(r, None)
                else:
                    table.items[h][r] = before
            raise

    models.DynamoDBBackend.transact_write_items = transact_write_items


def query_one_partition() -> None:
    """Makes a Query on a table's own key look only at that key's partition."""
    from moto.dynamodb.models.table import Table

    original = Table.query
    index_name_position = 6  # after hash_key: range_comparison, range_objs, limit, start key,
    # scan_index_forward, projection_expressions, index_name (moto 5.2's signature)

    def query(self, hash_key, *args, **kwargs):
        index_name = (
            args[index_name_position] if len(args) > index_name_position else kwargs.get("index_name")
        )
        if index_name or hash_key is None:
            return original(self, hash_key, *args, **kwargs)

        def partition():
            found = self.items.get(hash_key)
            if found is None:
                return []
            items = list(found.values()) if self.range_key_attr else [found]
            return sorted(
                items, key=lambda x: (x.hash_key, x.range_key) if x.range_key else x.hash_key
            )

        # The query's own scan of "all items" then sees only the partition it filters for.
        self.all_items = partition
        try:
            return original(self, hash_key, *args, **kwargs)
        finally:
            del self.all_items

    Table.query = query


def main() -> None:
    host, port = sys.argv[1], int(sys.argv[2])
    remember_dedupe_ids(float(os.environ.get("STEWARD_MOTO_SQS_DEDUPE_SECONDS", "300")))
    back_up_touched_items_only()
    query_one_partition()
    app = DomainDispatcherApplication(create_backend_app)
    lock = threading.Lock()

    def serialized(environ, start_response):
        with lock:
            # Consume the response inside the lock: the work happens while iterating.
            return list(app(environ, start_response))

    run_simple(host, port, serialized, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
