from agents.sdk import define_artifacts

# Reports are kept; notes for a day after their last update.
artifacts = define_artifacts(
    kinds={"report": "A Markdown report.", "note": "A short note."}, tag_artifact=True, retention={"note": 1}
)
