"""Django's ``runserver`` for this platform: an app of its own, listed before ``daphne`` in
``INSTALLED_APPS`` so that its command wins (the first app's command does), while
``agent_platform`` stays after the contrib apps its admin module builds on."""
