from medsim.cli import main


def test_one_pair(capsys):
    assert main(["judge", "--truth", "Pulmonary embolism", "--diagnosis",
                 "Acute bilateral pulmonary emboli with small right lower lobe infarct"]) == 0
    assert capsys.readouterr().out.startswith("RIGHT (pre-check alone: precheck/more_specific)")
    assert main(["judge", "--truth", "Type 2 diabetes mellitus", "--diagnosis", "Type 1 diabetes"]) == 0
    assert capsys.readouterr().out.startswith("WRONG")
    assert main(["judge", "--truth", "Silicosis", "--diagnosis", "Interstitial lung disease (ILD)"]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("UNDECIDED") and "--judge-llm" in out.err


def test_pairs_with_labels_give_agreement_and_errors(tmp_path, capsys):
    p = tmp_path / "p.jsonl"
    p.write_text('{"truth": "Gout", "diagnosis": "gout", "label": true}\n'
                 '{"truth": "Gout", "diagnosis": "Pseudogout", "label": true}\n'
                 '{"truth": "Asthma", "diagnosis": "COPD"}\n')
    assert main(["judge", "--pairs", str(p)]) == 0
    out = capsys.readouterr().out
    assert "all                 2      1     0.500    0    1" in out
    assert "[false_negative]" in out and "'COPD' for 'Asthma'" in out


def test_the_shipped_set_with_a_model_judge(capsys):
    assert main(["judge", "--pairs", "shipped", "--judge-llm", "scripted", "--show", "none"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("pre-check + scripted on shipped") and "disagreements" not in out


def test_bad_input_is_a_clear_error(tmp_path, capsys):
    assert main(["judge", "--truth", "Gout"]) == 2
    assert "go together" in capsys.readouterr().err
    assert main(["judge"]) == 2
    assert "--pairs" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"truth": "Gout"}\n')
    assert main(["judge", "--pairs", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:1" in err and "'diagnosis'" in err
