"""``manage.py up``: start tdweb (web, worker, beat, Redis if needed) with no demo data."""

from django.conf import settings
from django.core.management.base import BaseCommand

from streams_app.launcher import Launcher


class Command(BaseCommand):
    help = "Start every tdweb process and stay in the foreground until Ctrl-C."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("--once", action="store_true", help="start, check, stop, exit 0 (smoke test)")

    def handle(self, *args: object, **options: object) -> None:
        launcher = Launcher.from_settings()
        try:
            launcher.start()
            self.stdout.write(
                self.style.SUCCESS(
                    f"tdweb is up: http://{settings.TDWEB_HOST}:{settings.TDWEB_PORT}/  "
                    f"(sign in as {settings.TDWEB_ADMIN_USER} / the TDWEB_ADMIN_PASSWORD, default taosdata)\n"
                    f"TDengine REST: http://{settings.TDWEB_HOST}:{settings.TDWEB_PORT}/rest/sql   "
                    "logs: var/log/"
                )
            )
            if not options["once"]:
                self.stdout.write("Press Ctrl-C to stop.")
                launcher.wait_forever()
        finally:
            self.stdout.write("stopping...")
            launcher.stop()
