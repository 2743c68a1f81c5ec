"""A handler schedule: one task session per team, keyed, and what it was told."""

from agents.sdk import define_schedule


async def fan_out(args):
    stamp = args.fired_at.isoformat()
    await args.host.kv.put("last-fanout", {"scheduleId": args.schedule_id, "firedAt": stamp})
    for team in ("red", "blue"):
        await args.send(f"Report for team {team} at {stamp}.", key=f"team:{team}", mode="chat", title=f"{team} report")


schedule = define_schedule(cron="0 3 * * *", handler=fan_out, description="Nightly, one report per team.")
