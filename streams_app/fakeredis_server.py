"""A Redis-compatible server for machines without Redis (the launcher's last resort).

``python -m streams_app.fakeredis_server --port 6380`` serves fakeredis (with Lua, which channels-redis
needs) over TCP. Data lives in memory only.
"""

from __future__ import annotations

import argparse

from fakeredis import TcpFakeServer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=6379)
    args = ap.parse_args()
    server = TcpFakeServer((args.host, args.port), server_type="redis")
    server.serve_forever()


if __name__ == "__main__":
    main()
