// Drives the service case of a site written by `utilgate site` in a real Chromium, as a reader
// would, and fails (exit 1, one line per failed check on stderr) on anything a reader would
// see go wrong: the service row missing or not filtered as `serve`, a chart without its
// accessible name, marks outside their chart, hover or focus not showing a night's figures, a
// mark that opens no run, a script or console error, a request to any other host.
// Usage: node serve_driver.mjs SITE_DIR NIGHTS. Prints the checks it made as JSON on stdout.
import { chromium } from "playwright-core";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [dir, nightsArg] = process.argv.slice(2);
const nights = Number(nightsArg);
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

  await page.goto(root + "index.html");
  const rows = page.locator("tr.case");
  check("index lists the service case", (await rows.count()) === 1, `${await rows.count()} rows`);
  await page.selectOption("select[name=phase]", "serve");
  check("the phase filter keeps it as serve", await rows.first().isVisible());
  check("the filter is in the address", page.url().includes("#phase=serve"), page.url());
  await page.selectOption("select[name=phase]", "");
  await page.selectOption("select[name=sort]", "drop");
  check("sorting by the latest drop keeps it", await rows.first().isVisible());

  await page.click("tr.case a");
  await page.waitForURL((u) => u.pathname.includes("/cases/"), { timeout: 10000 });
  const charts = page.locator("figure.serve svg[role=img]");
  check("three charts", (await charts.count()) === 3, `${await charts.count()}`);
  for (let c = 0; c < (await charts.count()); c++) {
    const chart = charts.nth(c);
    const label = (await chart.getAttribute("aria-label")) || "";
    check(`chart ${c} has its accessible name`, label.includes(` over ${nights} nights`), label);
    const marks = chart.locator("a.mark");
    const box = await chart.boundingBox();
    let inside = 0;
    for (let i = 0; i < (await marks.count()); i++) {
      const b = await marks.nth(i).boundingBox();
      if (b && b.width > 0 && b.x >= box.x && b.x + b.width <= box.x + box.width
        && b.y >= box.y && b.y + b.height <= box.y + box.height) inside += 1;
    }
    check(`chart ${c}: every night a mark inside it`, inside === nights, `${inside} of ${nights}`);
  }
  const last = charts.first().locator("a.mark").last();
  await last.hover();
  const info = await page.locator("#point").textContent();
  check("hover shows the night's figures", info.includes(`run ${nights}`) && info.includes("TTFT p50"), info);
  await charts.first().locator("a.mark").first().focus();
  check("focus shows them too", (await page.locator("#point").textContent()).includes("run 1"));
  await last.click();
  await page.waitForURL((u) => u.pathname.endsWith(`/runs/${nights}.html`), { timeout: 10000 });
  check("a mark opens its run", page.url().endsWith(`/runs/${nights}.html`), page.url());
  await page.click("a.history");
  await page.waitForURL((u) => u.pathname.includes("/cases/"), { timeout: 10000 });
  check("the run links back to the case's page", page.url().includes("/cases/"), page.url());

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
