"""A one-module wheel, `feeformat`, built by hand, and a requirements file that installs it
offline: what the application's `setup` installs in the tests (no network)."""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile


def wheel() -> bytes:
    """A one-module wheel, `feeformat`, built by hand (pip installs it offline)."""
    files = {"feeformat.py": b"def say(text):\n    return 'Per our price list: ' + text\n",
             "feeformat-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: feeformat\nVersion: 1.0\n",
             "feeformat-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\n"
                                               b"Tag: py3-none-any\n"}
    record = "".join(f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},"
                     f"{len(data)}\n" for name, data in files.items())
    record += "feeformat-1.0.dist-info/RECORD,,\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        archive.writestr("feeformat-1.0.dist-info/RECORD", record)
    return buffer.getvalue()


WHEEL = "wheels/feeformat-1.0-py3-none-any.whl"
REQUIREMENTS = f"--no-index\n./{WHEEL}\n"
