"""``manage.py bootstrap``: create the admin account ``root`` and its inbox (first run only)."""

from django.core.management.base import BaseCommand

from streams_app.services.users import admin_bootstrap, inbox_url


class Command(BaseCommand):
    help = "Create the root account (TDWEB_ADMIN_PASSWORD, default taosdata) and its inbox if missing."

    def handle(self, *args: object, **options: object) -> None:
        user, inbox = admin_bootstrap()
        self.stdout.write(f"admin: {user}; inbox: {inbox_url(inbox=inbox)}")
