"""What wakes an agent besides the session API: the Slack and GitHub packs, schedules,
reminders, and the outbound webhooks that tell others what happened (DESIGN §9.2, §9.3,
§9.10). Each trigger is a module of plain functions; views and tasks stay thin shims."""
