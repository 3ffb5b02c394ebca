// Drives a site written by `utilgate site` in a real Chromium, as a reader would, and fails
// (exit 1, one line per failed check on stderr) on anything a reader would see go wrong:
// a script error, a console error, a failed load, a request to any other host than the
// site's own files, marks outside their chart, filters that a reload forgets, links that go
// nowhere. Usage: node driver.mjs SITE_DIR CASE_RUNS CHANGE_RUN
// (the case's number of nights and the run its change point is on). Prints the checks it
// made as JSON on stdout.
import { chromium } from "playwright-core";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [dir, nightsArg, changeArg] = process.argv.slice(2);
const nights = Number(nightsArg);
const changeRun = String(changeArg);
const root = pathToFileURL(path.resolve(dir)).href + "/";
const failures = [];
const checks = [];
const check = (name, ok, detail = "") => {
  checks.push(name);
  if (!ok) failures.push(`${name}${detail ? ": " + detail : ""}`);
};

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const outside = [];
  const errors = [];
  page.on("request", (r) => { if (!r.url().startsWith("file://")) outside.push(r.url()); });
  page.on("requestfailed", (r) => errors.push(`failed load ${r.url()}: ${r.failure()?.errorText}`));
  page.on("pageerror", (e) => errors.push(`script error: ${e.message}`));
  page.on("console", (m) => { if (m.type() === "error") errors.push(`console: ${m.text()}`); });

  // The index: every case a row, the filters kept in the address across a reload.
  await page.goto(root + "index.html");
  const rows = page.locator("tr.case");
  check("index lists the case", (await rows.count()) === 1, `${await rows.count()} rows`);
  check("the shown count", (await page.locator("#shown").textContent()) === "1 of 1 shown");
  await page.selectOption("select[name=verdict]", "pass");
  check("a verdict filter hides the regressed case", await rows.first().isHidden());
  check("the filter is in the address", page.url().includes("#verdict=pass"), page.url());
  await page.reload();
  check("a reload keeps the filter",
    (await page.inputValue("select[name=verdict]")) === "pass" && (await rows.first().isHidden()));
  await page.goto(root + "index.html#verdict=regressed&q=seed");
  check("a link opens the same view", await rows.first().isVisible());
  await page.fill("input[name=q]", "no-such-case");
  check("text filters", await rows.first().isHidden());
  await page.fill("input[name=q]", "");

  // The case page: one mark per night inside its chart, the change at its night, details on
  // hover and focus, the scale toggle.
  await page.click("tr.case a");
  await page.waitForURL((u) => u.pathname.includes("/cases/"), { timeout: 10000 });
  check("the case link opens its page", page.url().includes("/cases/"), page.url());
  const chart = page.locator("figure.util svg.util-chart");
  const marks = chart.locator("a.mark");
  check("one visible mark per night", (await marks.count()) === nights, `${await marks.count()}`);
  const box = await chart.boundingBox();
  let inside = 0;
  for (let i = 0; i < (await marks.count()); i++) {
    const b = await marks.nth(i).boundingBox();
    if (b && b.width > 0 && b.x >= box.x && b.x + b.width <= box.x + box.width
      && b.y >= box.y && b.y + b.height <= box.y + box.height) inside += 1;
  }
  check("every mark is drawn inside its chart", inside === nights, `${inside} of ${nights}`);
  check("the change point is on its night",
    (await chart.locator(`g.changepoint[data-run="${changeRun}"]`).count()) === 1);
  const changed = chart.locator(`a.mark[data-run="${changeRun}"]`);
  await changed.hover();
  const info = await page.locator("#point").textContent();
  check("hover shows the night's figures", info.includes(`run ${changeRun}`) && info.includes("regressed"), info);
  await chart.locator("a.mark").first().focus();
  check("focus shows them too", (await page.locator("#point").textContent()).includes("run 1"));
  const changedUse = changed.locator("use");
  const floorY = await changedUse.getAttribute("y");
  const floorBox = await changed.boundingBox();
  await page.click("button[data-show=fit]");
  const fitLayer = chart.locator("g.scale[data-scale=fit]");
  const floorLayer = chart.locator("g.scale[data-scale=floor]");
  check("the toggle shows the fitted scale",
    (await fitLayer.isVisible()) && (await floorLayer.isHidden()),
    `fit visible ${await fitLayer.isVisible()}, floor hidden ${await floorLayer.isHidden()}`);
  const fitBox = await changed.boundingBox();
  check("the toggle moves each mark to its height on the fitted scale",
    (await changedUse.getAttribute("y")) === (await changedUse.getAttribute("data-fit"))
      && fitBox && floorBox && Math.abs(fitBox.y - floorBox.y) > 1,
    `y ${floorY} -> ${await changedUse.getAttribute("y")}`);
  await page.click("button[data-show=floor]");
  check("and back to the floor scale", (await changedUse.getAttribute("y")) === floorY);

  // A mark is a link to its run's page, which links to its neighbours and back.
  await changed.click();
  await page.waitForURL((u) => u.pathname.endsWith(`/runs/${changeRun}.html`), { timeout: 10000 });
  check("a mark opens its run", page.url().endsWith(`/runs/${changeRun}.html`), page.url());
  await page.click("a[rel=next]");
  await page.waitForURL((u) => u.pathname.endsWith(`/runs/${Number(changeRun) + 1}.html`), {
    timeout: 10000,
  });
  check("the next night", page.url().endsWith(`/runs/${Number(changeRun) + 1}.html`), page.url());
  await page.click("nav.site-nav >> text=changes");
  await page.waitForURL((u) => u.pathname.endsWith("/changes.html"), { timeout: 10000 });
  check("the changes page lists the change",
    (await page.locator("section.change").count()) >= 1
    && (await page.content()).includes("REGRESSION"));

  check("no script or console error, no failed load", errors.length === 0, errors.join("; "));
  check("no request leaves the site", outside.length === 0, outside.join(", "));
} catch (e) {
  failures.push(`the drive stopped after "${checks.at(-1) ?? "start"}": ${e.message.split("\n")[0]}`);
} finally {
  await browser.close();
}
console.log(JSON.stringify({ checks, failures }));
if (failures.length) {
  for (const f of failures) console.error(`FAILED ${f}`);
  process.exit(1);
}
