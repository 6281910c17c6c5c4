"""GitHub mode: the Docker action's entrypoint and the thin shells it needs.

- `event`    pure: the event payload and settings become one activity to perform;
- `settings` the environment the runner hands over, validated, secrets hidden;
- `api`      PyGithub calls: comments, statuses, reactions, permissions;
- `sticky`   the one flipgate comment per pull request, never overwritten by an older run;
- `messages` pure: the Markdown and status texts flipgate writes itself;
- `workflow` the runner's channels: workflow commands, outputs, step summary;
- `action`   `main`, a plain sequence of those steps.
"""
