"""Draw the images of the shipped imaging cases (agents/casesets/imaging.jsonl), made for
medsim with Pillow: a chest film with a left pneumothorax, a forearm film with a distal
radius fracture, an axial chest CT slice with a lung mass, a 12-lead ECG strip with inferior
ST elevation, a skin lesion. Deterministic: the same bytes on every run.

    .venv/bin/python agents/casesets/make_images.py [--out DIR]
"""
from __future__ import annotations

import argparse
import math
import random
from pathlib import Path

from PIL import Image, ImageDraw, ImageFilter

OUT = Path(__file__).resolve().parent / "images"
W = 512


def _noise(img: Image.Image, amount: int, seed: int) -> Image.Image:
    rnd = random.Random(seed)
    px = img.load()
    for y in range(img.height):
        for x in range(img.width):
            v = px[x, y]
            px[x, y] = max(0, min(255, v + rnd.randint(-amount, amount)))
    return img


def chest_xray_pneumothorax() -> Image.Image:
    img = Image.new("L", (W, W), 18)
    d = ImageDraw.Draw(img)
    d.rectangle([60, 40, 452, 480], fill=40)  # soft tissue
    # lungs: the right (image left) normal, the left (image right) collapsed with no markings outside it
    d.ellipse([95, 90, 245, 440], fill=14)
    d.ellipse([268, 90, 418, 440], fill=6)  # hyperlucent hemithorax: air, no vessels
    d.ellipse([300, 170, 385, 380], fill=30)  # the collapsed lung
    d.ellipse([300, 170, 385, 380], outline=120, width=2)  # the visceral pleural line
    for i in range(14):  # vascular markings, right lung only
        a = math.radians(200 + i * 10)
        d.line([(170, 260), (170 + 70 * math.cos(a), 260 + 110 * math.sin(a))], fill=40, width=2)
    for i in range(6):  # ribs
        y = 100 + i * 55
        d.arc([85, y - 30, 255, y + 40], 200, 340, fill=110, width=6)
        d.arc([258, y - 30, 428, y + 40], 200, 340, fill=110, width=6)
    d.rectangle([238, 60, 272, 470], fill=150)  # spine and mediastinum
    d.ellipse([210, 260, 300, 380], fill=120)  # heart
    d.polygon([(150, 40), (230, 70), (180, 80)], fill=140)  # clavicles
    d.polygon([(362, 40), (282, 70), (332, 80)], fill=140)
    d.text((440, 30), "L", fill=230)
    img = img.filter(ImageFilter.GaussianBlur(1.2))
    return _noise(img, 6, 1)


def forearm_fracture() -> Image.Image:
    img = Image.new("L", (W, W), 10)
    d = ImageDraw.Draw(img)
    d.rounded_rectangle([150, 20, 360, 500], radius=60, fill=45)  # soft tissue
    d.rounded_rectangle([185, 30, 230, 400], radius=18, fill=175)  # ulna
    d.rounded_rectangle([250, 30, 300, 330], radius=18, fill=180)  # radius shaft
    d.polygon([(246, 342), (306, 338), (322, 420), (238, 430)], fill=180)  # distal fragment, dorsally tilted
    d.line([(244, 334), (308, 330)], fill=20, width=4)  # the fracture line
    for i in range(5):  # carpal bones
        d.ellipse([200 + i * 22, 440, 222 + i * 22, 470], fill=160)
    d.text((460, 30), "R", fill=230)
    img = img.filter(ImageFilter.GaussianBlur(1.0))
    return _noise(img, 5, 2)


def ct_chest_mass() -> Image.Image:
    img = Image.new("L", (W, W), 0)
    d = ImageDraw.Draw(img)
    d.ellipse([40, 90, 472, 430], fill=95)  # body
    d.ellipse([70, 120, 240, 400], fill=12)  # right lung
    d.ellipse([272, 120, 442, 400], fill=12)  # left lung
    d.ellipse([225, 200, 295, 270], fill=110)  # heart/mediastinum
    d.ellipse([240, 330, 272, 362], fill=220)  # vertebra
    d.ellipse([330, 170, 392, 226], fill=100)  # the spiculated mass, left upper lobe
    for i in range(12):
        a = math.radians(i * 30)
        d.line([(361, 198), (361 + 42 * math.cos(a), 198 + 36 * math.sin(a))], fill=80, width=2)
    d.text((445, 440), "L", fill=200)
    img = img.filter(ImageFilter.GaussianBlur(0.8))
    return _noise(img, 8, 3)


def ecg_inferior_stemi() -> Image.Image:
    img = Image.new("RGB", (W * 2, 300), (255, 244, 244))
    d = ImageDraw.Draw(img)
    for x in range(0, W * 2, 10):
        d.line([(x, 0), (x, 300)], fill=(255, 205, 205) if x % 50 else (240, 150, 150))
    for y in range(0, 300, 10):
        d.line([(0, y), (W * 2, y)], fill=(255, 205, 205) if y % 50 else (240, 150, 150))
    leads = [("II", 75, 1), ("III", 150, 1), ("aVL", 225, -1)]  # elevation in II and III, reciprocal in aVL
    for name, base, st in leads:
        d.text((6, base - 40), name, fill=(20, 20, 20))
        pts = []
        for beat in range(7):
            x0 = 40 + beat * 140
            shape = [(0, 0), (20, -4), (28, 0), (36, 6), (40, -55), (44, 14), (50, 0), (56, -12 * st),
                     (80, -16 * st), (100, -10 * st), (112, 0), (140, 0)]
            pts += [(x0 + dx, base + dy) for dx, dy in shape]
        d.line(pts, fill=(10, 10, 30), width=2)
    return img


def skin_lesion() -> Image.Image:
    img = Image.new("RGB", (W, W), (226, 180, 150))
    d = ImageDraw.Draw(img)
    rnd = random.Random(5)
    pts = []
    for i in range(36):  # an irregular border
        a = math.radians(i * 10)
        r = 95 + rnd.randint(-28, 28)
        pts.append((256 + r * math.cos(a), 256 + r * 0.85 * math.sin(a)))
    d.polygon(pts, fill=(70, 40, 30))
    for _ in range(9):  # variegated colour
        x, y = 200 + rnd.randint(0, 110), 200 + rnd.randint(0, 110)
        d.ellipse([x, y, x + 34, y + 28], fill=rnd.choice([(30, 20, 20), (120, 60, 50), (90, 80, 110)]))
    d.line([(380, 470), (480, 470)], fill=(0, 0, 0), width=3)
    d.text((392, 478), "10 mm", fill=(0, 0, 0))
    return img.filter(ImageFilter.GaussianBlur(1.5))


IMAGES = {
    "cxr_left_pneumothorax.png": chest_xray_pneumothorax,
    "xr_forearm_distal_radius_fracture.png": forearm_fracture,
    "ct_chest_left_upper_lobe_mass.png": ct_chest_mass,
    "ecg_inferior_st_elevation.png": ecg_inferior_stemi,
    "photo_skin_lesion.png": skin_lesion,
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, draw in IMAGES.items():
        draw().save(args.out / name, optimize=False)
    print(f"{len(IMAGES)} images in {args.out}")


if __name__ == "__main__":
    main()
