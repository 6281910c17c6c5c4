"""`gate.review`: whether a flip the sample-size rule held back waits for a person.

`none` (the default, and every configuration that does not name the key): a held-back
flip leaves a passing run passing, with a warning. `required` (what `flipgate init`
writes): the run ends `awaiting_review`, its commit status `pending`, until a maintainer
labels the held-back rows or accepts them in the pull request (github/awaiting.py).
"""

from __future__ import annotations

REVIEW_NONE, REVIEW_REQUIRED = "none", "required"
REVIEW_MODES = (REVIEW_NONE, REVIEW_REQUIRED)
