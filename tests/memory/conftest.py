def pytest_configure(config):
    config.addinivalue_line("markers", "torch: loads a torch model (MiniLM or a tiny CLIP); a few seconds in all")
