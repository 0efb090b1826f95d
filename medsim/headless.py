"""A headless Chromium driven through Selenium, for the report's browser test and the
screenshots of it (docs/outputs.md, README.md). Debian's ``chromium`` and
``chromium-driver`` (installed by ``make test``) and ``selenium`` (the ``test`` extra);
nothing is downloaded, no window is opened."""
from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from typing import Any, Iterator

__all__ = ["BrowserUnavailable", "chromium"]


class BrowserUnavailable(RuntimeError):
    """No headless browser can be started here (the message says what is missing)."""


def _which(*names: str) -> str | None:
    return next((p for n in names if (p := shutil.which(n))), None)


@contextmanager
def chromium(width: int = 1280, height: int = 900) -> Iterator[Any]:
    """A headless Chromium WebDriver of ``width`` x ``height`` CSS pixels."""
    try:
        from selenium import webdriver
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.chrome.service import Service
    except ImportError as e:
        raise BrowserUnavailable(f"selenium is not installed ({e}); pip install -e '.[test]'") from None
    binary = os.environ.get("MEDSIM_CHROMIUM") or _which("chromium", "chromium-browser", "google-chrome")
    driver_path = os.environ.get("MEDSIM_CHROMEDRIVER") or _which("chromedriver")
    if not binary or not driver_path:
        raise BrowserUnavailable("no chromium/chromedriver on PATH (Debian: apt-get install chromium chromium-driver; "
                                 "`make test` installs them)")
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager: never download a driver
    opts = webdriver.ChromeOptions()
    opts.binary_location = binary
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
              "--disable-extensions", "--disable-background-networking", "--disable-component-update",
              "--hide-scrollbars", "--force-device-scale-factor=1", f"--window-size={width},{height}"):
        opts.add_argument(a)
    try:
        driver = webdriver.Chrome(service=Service(driver_path), options=opts)
    except WebDriverException as e:
        raise BrowserUnavailable(f"{binary} with {driver_path} did not start: {e.msg or e}") from None
    try:
        # the viewport itself (a window size would include the browser's frame)
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        driver.set_page_load_timeout(30)
        yield driver
    finally:
        driver.quit()
