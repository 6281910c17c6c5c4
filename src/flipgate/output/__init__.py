"""What a run writes: comment.md, report.json, the terminal view and progress."""
