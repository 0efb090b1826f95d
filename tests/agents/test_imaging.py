"""Imaging: the NEJM loader, images returned with their reports, a vision participant's
reading reaching the doctor, the report-only path, a missing image, image content for
backends that can send it."""
import hashlib
import json
import shutil

import pytest

from agents.cases import load_cases
from agents.cases.nejm import load_nejm_jsonl
from agents.cases.registry import resolve_case_path
from agents.consultation import ConsultationConfig
from agents.llm.base import CallContext, GenerateParams, Message, chat_message
from agents.llm.scripted import ScriptedLLM
from tests.helpers import consult, of, roles


@pytest.fixture(scope="module")
def imaging():
    cases, _ = load_cases("imaging")
    return {c.id: c for c in cases}


def _nejm(tmp_path, *rows):
    p = tmp_path / "nejm.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return p


def test_the_nejm_loader(tmp_path):
    shutil.copy(resolve_case_path("imaging").parent / "images" / "photo_skin_lesion.png", tmp_path / "lesion.png")
    good = {"image_url": "lesion.png", "question": "What is the most likely diagnosis?",
            "patient_info": "A 48-year-old woman presents with a mole on her back that has grown over months.",
            "physical_exams": "A 14 mm asymmetric pigmented lesion with an irregular border.",
            "answers": [{"text": "Seborrheic keratosis", "correct": False}, {"text": "Melanoma", "correct": True},
                        {"text": "Dermatofibroma", "correct": False}]}
    p = _nejm(tmp_path, good, {**good, "answers": [{"text": "A", "correct": False}]},
              {**good, "answers": [{"text": "A", "correct": True}, {"text": "B", "correct": True}]},
              {"question": "x", "answers": [{"text": "A", "correct": "yes"}]})
    cases, errors = load_nejm_jsonl(p)
    assert len(cases) == 1
    c = cases[0]
    assert (c.diagnosis, c.demographics) == ("Melanoma", "48-year-old woman")
    assert c.imaging[0].image == str(tmp_path / "lesion.png") and c.extra["answers"][1] == "Melanoma"
    assert "Melanoma" not in json.dumps(c.patient) and "mole" in c.patient["History"]
    fields = [(e.line, e.field) for e in errors]
    assert (2, "answers") in fields and (3, "answers") in fields and (4, "patient_info") in fields
    assert any(f == "answers[0]" for _, f in fields)
    # the registry detects the format
    cases2, _ = load_cases(str(p), skip_invalid=True)
    assert [x.id for x in cases2] == [c.id]


def test_an_image_reaches_the_doctor_through_a_vision_participant(imaging):
    case = imaging["img-001"]
    llm = ScriptedLLM(imaging)
    row, ev = consult(case, roles(llm, vision=llm))
    got = of(ev, "image_returned")
    assert got and got[0]["study"] == "Chest X-ray"
    assert got[0]["sha256"] == hashlib.sha256(open(case.imaging[0].image, "rb").read()).hexdigest()
    read = of(ev, "image_read")
    assert read and "visceral pleural line" in read[0]["text"]
    vision_calls = of(ev, "llm_call", role="vision")
    assert vision_calls[0]["messages"][-1]["images"] == [case.imaging[0].image]
    told = [c["messages"][-1]["content"] for c in of(ev, "llm_call", role="doctor")]
    assert any("Reading of the X-ray of the chest image: The image shows:" in t for t in told)
    assert row["status"] == "diagnosed"


def test_without_a_vision_model_the_doctor_has_the_report_alone(imaging):
    row, ev = consult(imaging["img-002"], roles(ScriptedLLM(imaging)))
    assert of(ev, "image_returned") and not of(ev, "image_read")
    assert "report alone" in of(ev, "image_not_read")[0]["reason"]
    told = " ".join(c["messages"][-1]["content"] for c in of(ev, "llm_call", role="doctor"))
    assert "transverse fracture of the distal radius" in told and "Reading of" not in told


def test_a_missing_image_is_an_error_for_that_study_and_the_consultation_goes_on(imaging, tmp_path):
    from dataclasses import replace

    case = imaging["img-003"]
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"not a png")
    for image, words in ((str(tmp_path / "nope.png"), "cannot read"), (str(broken), "not a readable image")):
        c = replace(case, imaging=(replace(case.imaging[0], image=image),))
        llm = ScriptedLLM({c.id: c})
        row, ev = consult(c, roles(llm, vision=llm))
        err = of(ev, "image_error")
        assert err and words in err[0]["error"] and not of(ev, "image_read")
        told = " ".join(x["messages"][-1]["content"] for x in of(ev, "llm_call", role="doctor"))
        assert "could not be shown" in told and "spiculated mass" in told  # the report stands
        assert row["status"] == "diagnosed"


def test_images_go_as_content_parts_to_backends_that_can_send_them(imaging, tmp_path):
    img = imaging["img-001"].imaging[0].image
    m = chat_message(Message("user", "Read this image.", images=(img, "https://example.org/x.png")))
    assert m["content"][0] == {"type": "text", "text": "Read this image."}
    assert m["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert m["content"][2]["image_url"]["url"] == "https://example.org/x.png"


def test_a_text_only_model_gets_the_text_and_the_log_says_so(smol, imaging):
    out = smol.generate([Message("user", "Read this image.", images=(imaging["img-001"].imaging[0].image,))],
                        GenerateParams(max_tokens=4), CallContext("vision", "img-001"))
    assert "no image projector" in out.note


def test_the_server_vision_model_receives_the_image(imaging, fake_openai):
    from agents.llm.openai_compat import OpenAICompatLLM

    url, server = fake_openai
    v = OpenAICompatLLM(url, "vision-model")
    case = imaging["img-001"]
    llm = ScriptedLLM(imaging)
    row, ev = consult(case, roles(llm, vision=v), rules=ConsultationConfig())
    bodies = [q["body"] for q in server.requests if q["path"].endswith("/chat/completions")]
    parts = [p for b in bodies for m in b["messages"] if isinstance(m["content"], list) for p in m["content"]]
    assert any(p.get("type") == "image_url" and p["image_url"]["url"].startswith("data:image/png") for p in parts)
    assert of(ev, "image_read")


def test_a_clip_memory_embeds_the_images_a_consultation_returned(imaging, tmp_path):
    """Filing a right diagnosis keeps the study's image with the record; with CLIP as the
    embedder the record's vector is text and image together (a text-only embedder keeps
    the path and embeds the text)."""
    import numpy as np

    from agents.events import DictSink
    from agents.learning import Learner, returned_images
    from medsim.memory import StoreMemory
    from memory.embed import make_embedder, with_images
    from memory.store import MemoryStore, MemoryStoreError

    case = imaging["img-001"]
    llm = ScriptedLLM(imaging)
    _, ev = consult(case, roles(llm))
    assert returned_images(ev) == (case.imaging[0].image,)
    for kind in ("clip-tiny", "hash"):
        embedder = make_embedder(kind)
        with StoreMemory(MemoryStore(tmp_path / kind, embedder)) as memo:
            out = Learner(memo, llm, GenerateParams(), llm, llm, GenerateParams()).learn(case, ev, DictSink())
            assert out.action == "filed", out
            rec = memo.store.get(out.record_id)
            assert rec.images == (case.imaging[0].image,)
            _, vecs = memo.store._vectors("records", ids=np.array([rec.id]))
            text_vec = embedder.embed_texts([rec.text])[0]
            if kind == "hash":
                np.testing.assert_allclose(vecs[0], text_vec, atol=1e-6)
            else:
                want = with_images(text_vec, embedder.embed_images([case.imaging[0].image]))
                np.testing.assert_allclose(vecs[0], want, atol=1e-5)
                assert float(vecs[0] @ text_vec) < 0.999  # the image moved it
    # an unreadable image names itself, and nothing is stored
    with MemoryStore(tmp_path / "bad", make_embedder("clip-tiny")) as store:
        with pytest.raises(MemoryStoreError, match="missing.png"):
            store.add("records", case_id="x", case_key="k", text="t", images=[str(tmp_path / "missing.png")])
        assert store.state()["size"] == 0
