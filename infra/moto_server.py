"""moto's DynamoDB/SQS emulator, with every request handled one at a time.

moto's own server is threaded, and its DynamoDB backend does not lock a TransactWriteItems
call against concurrent ones: two racing transactions can both pass their conditions. Real
DynamoDB serializes transactions, and Steward's guarantees (a confirmation spent once, a tool
call applied once) rest on that. Serializing requests here makes the emulator as strict as the
service, so a race test that passes here means something.

Usage: python moto_server.py HOST PORT
"""

import sys
import threading

from moto.moto_server.threaded_moto_server import DomainDispatcherApplication, create_backend_app
from moto.moto_server.werkzeug_app import MotoRequestHandler
from werkzeug.serving import run_simple


def main() -> None:
    host, port = sys.argv[1], int(sys.argv[2])
    app = DomainDispatcherApplication(create_backend_app)
    lock = threading.Lock()

    def serialized(environ, start_response):
        with lock:
            # Consume the response inside the lock: the work happens while iterating.
            return list(app(environ, start_response))

    run_simple(host, port, serialized, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
