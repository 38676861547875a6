from django.apps import AppConfig


class StreamsAppConfig(AppConfig):
    """tdweb's only app."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "streams_app"
    verbose_name = "tdweb streams"

    def ready(self) -> None:
        from django.core import checks

        from streams_app.services.lake import deployment_check
        from streams_app.signals import signals_connect

        signals_connect()
        checks.register(deployment_check, "tdweb")
