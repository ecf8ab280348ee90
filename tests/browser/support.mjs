// Shared setup of the browser tests: Debian's chromium through playwright-core, the server URL
// from infra/browser-tests.sh, screenshots under the build folder.
import { mkdirSync } from 'node:fs';
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
  const context = await browser.newContext(
    phone ? { viewport: { width: 390, height: 844 }, isMobile: true } : { viewport: { width: 1280, height: 900 } },
  );
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
