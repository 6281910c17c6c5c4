"""Prompty generators, v1 and v2: read, rendered as the reference runtimes render them.

- `frontmatter`: the file's front matter (either version) into one `Prompty`;
- `messages`: rendered text into chat messages, each version's way;
- `render`: the templates (Jinja2 sandbox, Mustache) for every case;
- `forms`: one reader a generator form (this Prompty reader, a GitHub Models
  prompt file, a template file, a Python constant), each giving a `Prompty`;
- `child`: all of the above for untrusted files, in a limited child process.
"""

from flipgate.prompty.child import (
    Inspected,
    check_size,
    child_environment,
    inspect_isolated,
    render_isolated,
    render_values_isolated,
    sample_isolated,
)
from flipgate.prompty.frontmatter import InputSpec, Prompty, parse_prompty
from flipgate.prompty.messages import Message, split_v1, split_v2
from flipgate.prompty.references import has_sample
from flipgate.prompty.render import Reader, Rendered, referenced_files, render_cases, render_values

__all__ = [
    "InputSpec", "Inspected", "Message", "Prompty", "Reader", "Rendered", "check_size",
    "child_environment", "has_sample", "inspect_isolated", "parse_prompty", "referenced_files", "render_cases",
    "render_isolated", "render_values", "render_values_isolated", "sample_isolated", "split_v1", "split_v2",
]
