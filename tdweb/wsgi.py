"""WSGI entry point (management tools; the server is Daphne on ``tdweb.asgi``)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tdweb.settings")
application = get_wsgi_application()
