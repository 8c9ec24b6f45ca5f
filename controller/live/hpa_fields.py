"""What the controller keeps of an HPA: all of it but the field sets of its managedFields.

An HPA's ``managedFields`` record, per field manager, every field it owns (``fieldsV1``: a
nested object as large as the spec and the status together). The controller reads only who
wrote the status and when (``second_writer``), never which fields, and at 10,000 HPAs the
field sets are most of the HPA cache. The rest is kept as served: the spec, the status the
writer compares with, and the annotations (the fallback's among them).

A status write never sends the trimmed entries back (``writer.update_status``): the server
keeps its own record, and an update that carried edited entries could be read as a request
to replace it (tested against the real API server: the record is unchanged).
"""

from __future__ import annotations

from typing import Any


def hpa_essentials(hpa: dict[str, Any]) -> dict[str, Any]:
    """The HPA without its managedFields' field sets (an Informer transform)."""
    meta = hpa.get("metadata")
    managed = meta.get("managedFields") if isinstance(meta, dict) else None
    if not isinstance(managed, list):
        return hpa
    kept = [{k: v for k, v in e.items() if k != "fieldsV1"} if isinstance(e, dict) else e for e in managed]
    return {**hpa, "metadata": {**meta, "managedFields": kept}}  # type: ignore[dict-item]
