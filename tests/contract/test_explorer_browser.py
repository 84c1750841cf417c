"""The explorer in a real headless Chromium: what a person signs in to, sees, follows, downloads.

One browser walks the demo like a person: the sign-in form (a bad token, then the good one),
the home page, a series, a year's history with its SVG chart, its coverage calendar, an
observation and its evidence download, the revision log, and sign-out. Every link of every page
it loads must resolve. A screenshot of each page is saved under ``test-output/explorer/``.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urljoin, urlparse

import pytest
import requests
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.wait import WebDriverWait

from tests.browser import chromium
from tests.contract.conftest import ROOT, Gateway

SCREENSHOTS = ROOT / "test-output" / "explorer"
DOWNLOAD_TIMEOUT_S = 20.0
NAVIGATION_TIMEOUT_S = 15.0


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[webdriver.Chrome, Path]]:
    reason = chromium.missing()
    if reason is not None:
        pytest.fail(reason)
    base = tmp_path_factory.mktemp("chromium")
    downloads = base / "downloads"
    downloads.mkdir()
    driver = chromium.start(base / "profile", downloads, base / "chromedriver.log")
    try:
        yield driver, downloads
    finally:
        driver.quit()


def shot(driver: webdriver.Chrome, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1280, min(max(int(height), 800), 8000))
    assert driver.save_screenshot(str(SCREENSHOTS / f"{name}.png"))
    driver.set_window_size(1280, 1600)


def text(driver: webdriver.Chrome, css: str) -> str:
    return driver.find_element(By.CSS_SELECTOR, css).text


def innermost(driver: webdriver.Chrome, css: str, needle: str) -> WebElement:
    """The deepest element under ``css`` whose text holds ``needle``."""
    holders = [
        element
        for element in driver.find_elements(By.CSS_SELECTOR, f"{css} *")
        if needle in element.text
    ]
    assert holders, f"{needle!r} is not under {css}"
    return holders[-1]  # document order: the last one holding it is the deepest


def follow(driver: webdriver.Chrome, element: WebElement) -> None:
    """Click a link or submit button and wait for the next page: a click returns once it is
    dispatched, and the old page may still be the current one for a while."""
    old_page = driver.find_element(By.TAG_NAME, "html")
    element.click()
    wait = WebDriverWait(driver, NAVIGATION_TIMEOUT_S)
    wait.until(lambda _: is_gone(old_page))
    wait.until(lambda d: d.execute_script("return document.readyState") == "complete")


def is_gone(element: WebElement) -> bool:
    """Whether ``element``'s page has been replaced. Chromium may answer a question about it,
    asked while the next page replaces it, with "does not belong to the document" rather than
    a stale reference: both say it is gone."""
    try:
        element.is_enabled()
    except StaleElementReferenceException:
        return True
    except WebDriverException as error:
        if "does not belong to the document" in str(error):
            return True
        raise
    return False


def path_of(driver: webdriver.Chrome) -> str:
    return urlparse(driver.current_url).path


def assert_links_resolve(
    driver: webdriver.Chrome, gateway: Gateway, session: requests.Session
) -> None:
    """Every same-origin link on the page answers, through the signed-in session, without 404."""
    hrefs = {a.get_attribute("href") for a in driver.find_elements(By.CSS_SELECTOR, "a[href]")}
    for href in sorted(h for h in hrefs if h):
        url = urljoin(driver.current_url, href)
        assert url.startswith(gateway.base_url), url
        resp = session.get(url, headers={"Accept": "text/html"}, allow_redirects=False, timeout=10)
        assert resp.status_code == 200, (url, resp.status_code)


def wait_for_download(folder: Path, name: str) -> bytes:
    """The bytes of the download named ``name`` (the last segment of its URL: the answer says
    ``Content-Disposition: attachment``, no file name), perhaps with the extension the browser
    gives its content type."""
    deadline = time.monotonic() + DOWNLOAD_TIMEOUT_S
    while time.monotonic() < deadline:
        found = [p for p in folder.iterdir() if p.name == name or p.name.startswith(name + ".")]
        if len(found) == 1 and not list(folder.glob("*.crdownload")):
            return found[0].read_bytes()
        time.sleep(0.1)
    raise AssertionError(f"no download {name} in {sorted(p.name for p in folder.iterdir())}")


def test_a_person_signs_in_reads_every_page_verifies_evidence_and_signs_out(
    gateway: Gateway, browser: tuple[webdriver.Chrome, Path]
) -> None:
    driver, downloads = browser

    # Not signed in: the home page sends to the sign-in form.
    driver.get(gateway.url("/"))
    assert path_of(driver) == "/signin"
    assert "Ingresar al explorador" in text(driver, "h1")
    shot(driver, "01-signin")

    driver.find_element(By.ID, "token").send_keys("fxev_not_a_token")
    follow(driver, driver.find_element(By.ID, "ingresar"))
    assert "Token inválido" in text(driver, "#error")
    shot(driver, "02-signin-error")

    driver.find_element(By.ID, "token").send_keys(gateway.token)
    follow(driver, driver.find_element(By.ID, "ingresar"))
    assert path_of(driver) == "/"
    cookie = driver.get_cookie("fxev_sesion")
    assert cookie is not None and cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
    session = requests.Session()
    session.cookies.set("fxev_sesion", cookie["value"])

    # Home: the latest value (the demo's correction of 21 September), freshness, open alerts.
    assert "Tipo de cambio USD/PEN" in text(driver, "h1")
    latest = text(driver, "#ultimos")
    assert "2026-09-21" in latest and "3.356" in latest and "3.364" in latest
    assert "al_dia" in text(driver, "#frescura")
    assert "fuente_no_disponible" in text(driver, "#alertas")
    # The alert's detalle is readable: the element holding its message is wide, not a column a
    # few characters across.
    detail = innermost(driver, "#alertas", "HTTP 503 Service Unavailable")
    assert detail.size["width"] >= 300, (detail.tag_name, detail.size)
    assert "2021-01-01" in text(driver, "#cobertura")
    shot(driver, "03-home")
    assert_links_resolve(driver, gateway, session)

    # The series, then its history of 2026 with the chart drawn at build time.
    follow(driver, driver.find_element(By.LINK_TEXT, "publicado"))
    assert path_of(driver) == "/serie/publicado"
    assert "2021" in text(driver, "#anios") and "2026" in text(driver, "#anios")
    shot(driver, "04-series")
    assert_links_resolve(driver, gateway, session)

    follow(driver, driver.find_element(By.LINK_TEXT, "historia 2026"))
    assert path_of(driver) == "/serie/publicado/2026"
    svg = driver.find_element(By.CSS_SELECTOR, "#grafico svg")
    assert "USD/PEN publicado 2026" in svg.find_element(By.TAG_NAME, "title").get_attribute(
        "textContent"
    )
    assert len(svg.find_elements(By.TAG_NAME, "polyline")) == 2
    axis_labels = {t.text for t in svg.find_elements(By.TAG_NAME, "text")}
    assert {"ene", "set", "dic", "compra", "venta", "PEN por USD"} <= axis_labels
    assert svg.size["width"] > 500 and svg.size["height"] > 200  # drawn, not just present
    rows = driver.find_elements(By.CSS_SELECTOR, "#valores tbody tr")
    assert len(rows) > 150
    assert "3.356" in rows[-1].text
    shot(driver, "05-history-2026")
    assert_links_resolve(driver, gateway, session)

    # Its coverage calendar: legend, every day coloured.
    follow(driver, driver.find_element(By.LINK_TEXT, "calendario de cobertura 2026"))
    assert path_of(driver) == "/cobertura/publicado/2026"
    legend = text(driver, "#leyenda")
    for reason in ("con dato", "sin_dato", "fallo", "nd_fuente", "no hábil"):
        assert reason in legend
    cells = driver.find_elements(By.CSS_SELECTOR, "#calendario td[class^='st-']")
    assert len(cells) == 365
    assert driver.find_elements(By.CSS_SELECTOR, "#calendario td.st-dato")
    swatch = driver.find_element(By.CSS_SELECTOR, "#leyenda .st-dato")
    assert swatch.value_of_css_property("background-color") != "rgba(0, 0, 0, 0)"  # CSS applied
    shot(driver, "06-calendar-2026")
    assert_links_resolve(driver, gateway, session)

    # The observation behind the latest value: values, fragment, chain, evidence.
    driver.get(gateway.url("/"))
    follow(driver, driver.find_element(By.CSS_SELECTOR, "#ultimos a[href^='/observacion/']"))
    assert path_of(driver).startswith("/observacion/")
    assert "3.356" in text(driver, "#observacion")
    assert text(driver, "#fragmento") == "21/09/2026|3.356|3.364|"
    assert "Vigente" in text(driver, "#vigente")
    assert len(driver.find_elements(By.CSS_SELECTOR, ".cadena tbody tr")) >= 2
    sha = text(driver, "#sha256")
    commands = text(driver, "#verificar")
    assert 'curl -H "Authorization: Bearer $FXEV_TOKEN"' in commands
    assert f"{gateway.base_url}/v1/evidence/" in commands and "sha256sum ev.bin" in commands
    shot(driver, "07-observation")
    assert_links_resolve(driver, gateway, session)

    link = driver.find_element(By.ID, "evidencia")
    evidence_id = link.get_attribute("href").rsplit("/", 1)[1]
    link.click()
    data = wait_for_download(downloads, evidence_id)
    assert hashlib.sha256(data).hexdigest() == sha
    assert data == b"21/09/2026|3.356|3.364|\r\n"

    # The revision log.
    follow(driver, driver.find_element(By.LINK_TEXT, "Revisiones"))
    assert path_of(driver) == "/revisiones"
    rows = driver.find_elements(By.CSS_SELECTOR, "#revisiones tbody tr")
    assert [r.get_attribute("id") for r in rows] == ["r6", "r5", "r4", "r3", "r2", "r1"]
    assert "correccion" in text(driver, "#r4") and "fuente_no_disponible" in text(driver, "#r5")
    shot(driver, "08-revisions")
    assert_links_resolve(driver, gateway, session)

    # Sign out: the cookie is gone and pages send to the form again.
    follow(driver, driver.find_element(By.CSS_SELECTOR, "form[action='/signout'] button"))
    assert path_of(driver) == "/signin"
    assert driver.get_cookie("fxev_sesion") is None
    driver.get(gateway.url("/serie/publicado/2026"))
    assert path_of(driver) == "/signin"
    shot(driver, "09-signed-out")
