"""Debian's headless Chromium driven through Selenium, for the explorer's browser tests.

``install-chromium.sh`` (run by ``make test``) installs ``chromium`` and ``chromium-driver``
from Debian; Selenium is pointed at both binaries, so it never downloads a browser or driver.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,1600",
)


def missing() -> str | None:
    """Why the browser cannot start here, or None."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if shutil.which(path) is None:
            return f"{path} is missing: run tests/browser/install-chromium.sh (make test does)"
    return None


def start(profile: Path, downloads: Path, log: Path) -> webdriver.Chrome:
    """A fresh headless Chromium with its own profile that saves downloads to ``downloads``."""
    options = Options()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_experimental_option(
        "prefs",
        {
            "download.default_directory": str(downloads),
            "download.prompt_for_download": False,
            "safebrowsing.enabled": False,
        },
    )
    service = Service(executable_path=CHROMEDRIVER, log_output=str(log))
    driver = webdriver.Chrome(options=options, service=service)
    driver.execute_cdp_cmd(
        "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
    )
    driver.set_page_load_timeout(30)
    return driver
