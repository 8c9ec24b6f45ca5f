"""Reading a text file a user gave (a rule file, a snapshot): UTF-8, or one clear line.

A rule file saved as UTF-16 by an editor, or a binary given by mistake, must not end in a
traceback: the error says what the file is and what to do.
"""

from __future__ import annotations

import codecs

_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


def decode_text(data: bytes) -> str:
    """``data`` as UTF-8 text (a UTF-8 byte-order mark is dropped); ValueError with one
    line saying what the bytes are otherwise."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            raise ValueError(f"is {name} encoded; save it as UTF-8")
    if b"\x00" in data[:8192]:
        raise ValueError("is not a text file (it contains NUL bytes); give the YAML or JSON file")
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        raise ValueError(
            f"is not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}); save it as UTF-8"
        ) from None
