"""``manage.py demo``: the main job on real data (what ``make demo`` runs).

Starts every process (like ``up``), loads the Beijing air-quality dataset into ``air``, creates
the two demo streams, replays the last days live, prints the URL and the sign-in, and stays up
until Ctrl-C. ``--once`` does the same headless and exits 0 once every demo stream has caught up,
after printing a summary table.
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from streams_app.launcher import Launcher
from streams_app.services import demo


class Command(BaseCommand):
    help = "Run tdweb with the Beijing air-quality demo streams (see README)."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("--once", action="store_true", help="exit 0 after the streams caught up")
        parser.add_argument(
            "--speed",
            type=float,
            default=3600.0,
            help="replay speed in data seconds per wall second (default 3600; 0 = no pacing)",
        )
        parser.add_argument(
            "--no-services",
            action="store_true",
            help="do not start processes; use ones already running (make up)",
        )
        parser.add_argument("--timeout", type=float, default=1200.0, help="catch-up timeout in seconds")

    def handle(self, *args: object, **opts: Any) -> None:
        out = self.stdout
        launcher = None
        if not opts["no_services"]:
            launcher = Launcher.from_settings()
        try:
            if launcher is not None:
                launcher.start()
            url = f"http://{settings.TDWEB_HOST}:{settings.TDWEB_PORT}/"
            out.write(
                self.style.SUCCESS(
                    f"tdweb is up: {url}  sign in as {settings.TDWEB_ADMIN_USER} "
                    "(password: TDWEB_ADMIN_PASSWORD, default taosdata)"
                )
            )
            self._bootstrap()
            user = get_user_model().objects.get(username=settings.TDWEB_ADMIN_USER)
            t0 = time.monotonic()
            out.write(f"dataset: {demo.dataset_dir()}")
            data = demo.read_dataset()
            out.write(f"read {len(data):,} rows of {data['station'].nunique()} stations")
            demo.demo_reset(user=user)
            n = demo.demo_load_history(user=user, data=data, log=out.write)
            out.write(
                f"history: {n:,} rows up to {demo.HISTORY_CUTOFF_LOCAL} (Asia/Shanghai) "
                f"in {time.monotonic() - t0:.1f}s"
            )
            for sql in demo.demo_create_streams(
                user=user, host=settings.TDWEB_HOST, port=settings.TDWEB_PORT
            ):
                out.write(sql)
            out.write(
                f"replaying the remaining rows at speed {opts['speed']:g} "
                f"(watch {url}, the inbox at {url}inbox/)"
            )
            rows = demo.demo_replay(user=user, data=data, speed=float(opts["speed"]), log=out.write)
            out.write(f"replayed {rows:,} rows; waiting for the streams to catch up")
            if launcher is not None:
                launcher.check_alive()
            summary = demo.demo_wait_caught_up(timeout_s=float(opts["timeout"]), log=out.write)
            out.write(demo.summary_table(summary))
            problem = demo.demo_check(user=user)
            if problem:
                raise CommandError(problem)
            out.write(self.style.SUCCESS(f"demo caught up in {time.monotonic() - t0:.0f}s"))
            if not opts["once"] and launcher is not None:
                out.write(f"tdweb keeps running at {url} — press Ctrl-C to stop.")
                launcher.wait_forever()
        except (TimeoutError, RuntimeError) as e:
            raise CommandError(str(e)) from e
        finally:
            if launcher is not None:
                out.write("stopping...")
                launcher.stop()

    def _bootstrap(self) -> None:
        from django.core.management import call_command

        call_command("migrate", "--noinput", verbosity=0)
        call_command("bootstrap", verbosity=0)
