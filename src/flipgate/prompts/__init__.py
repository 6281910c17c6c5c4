"""The generator's prompt, in whichever form the repository keeps it: read, never run, and
rendered for every case as the form's own library renders it.

- `prompt`: the one shape every form is read into (`Prompt`);
- `forms`: one reader a form, peers behind one interface: a Prompty file (v1 or v2), a
  GitHub Models `.prompt.yml`, a template file (Jinja2, f-string, Mustache), a Python
  name (a string constant or a prompt object, read with the parser), `generator.messages`;
  the fifth form, the application's own code, is run, not read (`generator/command.py`);
- `frontmatter`, `messages`, `references`: a Prompty file's front matter, its rendered
  text split into chat messages each version's way, its `${file:}` data and sample;
- `render`: the templates (Jinja2 sandbox, Mustache) for every case;
- `child`: all of the above for a ref's files, in a limited child process.
"""

from flipgate.prompts.child import (
    Inspected,
    check_size,
    child_environment,
    inspect_isolated,
    render_isolated,
    render_values_isolated,
    sample_isolated,
)
from flipgate.prompts.frontmatter import parse_prompty
from flipgate.prompts.messages import Message, split_v1, split_v2
from flipgate.prompts.prompt import InputSpec, Prompt
from flipgate.prompts.references import has_sample
from flipgate.prompts.render import Reader, Rendered, referenced_files, render_cases, render_values

__all__ = [
    "InputSpec", "Inspected", "Message", "Prompt", "Reader", "Rendered", "check_size",
    "child_environment", "has_sample", "inspect_isolated", "parse_prompty", "referenced_files", "render_cases",
    "render_isolated", "render_values", "render_values_isolated", "sample_isolated", "split_v1", "split_v2",
]
