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


def main() -> None:
    host, port = sys.argv[1], int(sys.argv[2])
    remember_dedupe_ids(float(os.environ.get("STEWARD_MOTO_SQS_DEDUPE_SECONDS", "300")))
    app = DomainDispatcherApplication(create_backend_app)
    lock = threading.Lock()

    def serialized(environ, start_response):
        with lock:
            # Consume the response inside the lock: the work happens while iterating.
            return list(app(environ, start_response))

    run_simple(host, port, serialized, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
