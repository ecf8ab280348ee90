// Shared setup of the browser tests: Debian's chromium through playwright-core, the server URL
// from infra/browser-tests.sh, screenshots under the build folder, and the accessibility check
// (axe-core from node_modules, WCAG 2.1 A and AA rules).
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { chromium } from 'playwright-core';

export const BASE = process.env.STEWARD_URL ?? 'http://127.0.0.1:8080';
const SHOTS = process.env.STEWARD_SCREENSHOTS ?? path.resolve('target/browser-screenshots');
mkdirSync(SHOTS, { recursive: true });

// The flags this machine's closed network needs (no background connections, no QUIC).
const ARGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

/** Starts chromium with a fresh profile. */
export async function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true, // Playwright gives each launch a new, empty profile.
    args: ARGS,
  });
}

/** A new page (phone-sized when `phone`) that fails the test on any page error. */
export async function newPage(browser, { phone = false } = {}) {
  const context = await browser.newContext({
    ...(phone ? { viewport: { width: 390, height: 844 }, isMobile: true } : { viewport: { width: 1280, height: 900 } }),
    // Lets checkA11y inject axe-core as an inline script; the product's CSP is unchanged and
    // still tested by the Rust tests.
    bypassCSP: true,
    locale: 'en-US', // date fields take month, day, year (the keyboard test types into one)
  });
  const page = await context.newPage();
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') page.errors.push(m.text()); });
  return page;
}

/** Saves a full-page screenshot as <name>.png in the screenshots folder. */
export async function shot(page, name) {
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

/** Signs in with the development sign-in as `name`. */
export async function signIn(page, name) {
  await page.goto(`${BASE}/app/sign-in`);
  await page.getByLabel('Your name').fill(name);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${BASE}/app`);
}

// axe-core's script, read once from node_modules (never fetched over the network).
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** The WCAG 2.1 level AA rule set: everything tagged A or AA in WCAG 2.0 and 2.1. */
export const AXE_TAGS = ['wcag2a', 'wcag2aa', 'wcag21aa'];

/** Violations of these impacts fail the test; milder ones are printed. */
const FAILING_IMPACTS = new Set(['serious', 'critical']);

/** Every violation found by checkA11y, by page label (for a summary at the end of a run). */
export const a11yFindings = [];

function describe(label, url, v) {
  const nodes = v.nodes.map((n) => `    at ${n.target.join(' ')}\n      ${(n.failureSummary ?? '').replaceAll('\n', '\n      ')}`);
  return `[${v.impact}] ${v.id} on "${label}" (${url}): ${v.help}\n${nodes.join('\n')}\n    see ${v.helpUrl}`;
}

/**
 * Runs axe-core on the page as it is now and fails with a readable report (rule, element
 * selector, page) on any serious or critical WCAG 2.1 A/AA violation. `label` names the page
 * in the report. Works on any page from newPage (its context bypasses CSP for the injection).
 */
export async function checkA11y(page, label) {
  await page.waitForLoadState();
  if (!(await page.evaluate(() => typeof window.axe === 'object'))) {
    await page.addScriptTag({ content: AXE_SOURCE });
  }
  const result = await page.evaluate(
    (tags) => window.axe.run(document, { runOnly: { type: 'tag', values: tags }, resultTypes: ['violations'] }),
    AXE_TAGS,
  );
  const url = new URL(page.url()).pathname;
  for (const v of result.violations) a11yFindings.push({ label, url, id: v.id, impact: v.impact, nodes: v.nodes.length });
  const failing = result.violations.filter((v) => FAILING_IMPACTS.has(v.impact));
  const mild = result.violations.filter((v) => !FAILING_IMPACTS.has(v.impact));
  for (const v of mild) console.log(`accessibility (not failing): ${describe(label, url, v)}`);
  if (failing.length > 0) {
    throw new Error(`accessibility: ${failing.length} serious or critical WCAG 2.1 AA violation(s) on "${label}":\n${failing.map((v) => describe(label, url, v)).join('\n')}`);
  }
}
