"""A handler schedule that fails after sending one message (the sent session is kept)."""

from agents.sdk import define_schedule


async def fail(args):
    await args.send("This one was sent before the failure.")
    raise RuntimeError("the report service is down")


schedule = define_schedule(cron="0 4 * * *", handler=fail)
