"""Imaging studies in a consultation: which studies an order fetches, and whether a
study's image can be shown (a readable image file, read by
:func:`agents.image_file.read_image_bytes`: its SHA-256; a URL: passed on, not fetched
here)."""
from __future__ import annotations

import hashlib
import io
from pathlib import Path

from agents.cases.model import Case, ImagingStudy
from agents.findings import match_order
from agents.image_file import ImageFileError, read_image_bytes

__all__ = ["studies_for", "inspect_image"]


def studies_for(case: Case, order: str) -> list[ImagingStudy]:
    """The case's imaging studies an order matches (by the technician's own matching)."""
    if not case.imaging:
        return []
    hit_paths = [p for p, _ in match_order(case, order)]
    return [s for s in case.imaging if any(p.split(" > ")[0] in (s.test, f"{s.test} ({s.modality})") for p in hit_paths)]


def inspect_image(image: str) -> tuple[str | None, str | None]:
    """(sha256, None) for a readable image file, (None, None) for a URL, (None, why) when
    the file is missing, refused (:func:`read_image_bytes`) or not an image."""
    if image.startswith(("http://", "https://")):
        return None, None
    p = Path(image)
    try:
        data = read_image_bytes(p)
    except ImageFileError as e:
        return None, str(e)
    try:
        from PIL import Image, UnidentifiedImageError

        with Image.open(io.BytesIO(data)) as im:
            im.verify()
    except ImportError:
        pass  # no Pillow: the bytes are passed on unchecked
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as e:
        return None, f"{p} is not a readable image ({e})"
    return hashlib.sha256(data).hexdigest(), None
