// The organiser's main path with the keyboard only: after loading the sign-in page, every step
// is Tab, Shift+Tab, Enter, Space or typed characters — no clicks, no scripted focus. At every
// focus stop the focused element must show a visible focus indicator (an outline or a box
// shadow) and lie inside the viewport.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { BASE, launch, newPage, shot } from './support.mjs';

/** Most Tab presses to reach one target; a page needing more is itself a keyboard problem. */
const TABS_MAX = 60;

let browser;
let page;

before(async () => {
  browser = await launch();
  page = await newPage(browser);
});

after(async () => {
  await browser?.close();
});

/** What the focused element is and how its focus shows. */
async function focused() {
  return page.evaluate(() => {
    const el = document.activeElement;
    if (!el || el === document.body) return null;
    const style = getComputedStyle(el);
    const outline = style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0;
    const shadow = style.boxShadow !== 'none';
    const box = el.getBoundingClientRect();
    return {
      tag: el.tagName.toLowerCase(),
      type: el.getAttribute('type'),
      name: el.getAttribute('name'),
      id: el.id,
      text: (el.innerText || el.value || el.getAttribute('aria-label') || '').trim(),
      indicator: outline || shadow,
      visible: box.width > 0 && box.height > 0 && box.bottom > 0 && box.top < window.innerHeight,
      describe: `<${el.tagName.toLowerCase()}${el.id ? ` id="${el.id}"` : ''}> "${(el.innerText || el.value || '').trim().slice(0, 40)}" outline=${style.outlineStyle} ${style.outlineWidth} ${style.outlineColor} box-shadow=${style.boxShadow}`,
    };
  });
}

/** Asserts the focused element shows its focus. */
async function assertIndicator(step) {
  const f = await focused();
  assert.ok(f, `${step}: something has the focus`);
  assert.ok(f.indicator, `${step}: the focused element shows no focus indicator: ${f.describe}`);
  assert.ok(f.visible, `${step}: the focused element is outside the viewport: ${f.describe}`);
  return f;
}

/** Presses Tab (or Shift+Tab) until `wanted(focused)` holds, checking every stop on the way. */
async function tabTo(step, wanted, { back = false } = {}) {
  for (let i = 0; i < TABS_MAX; i += 1) {
    await page.keyboard.press(back ? 'Shift+Tab' : 'Tab');
    const f = await focused();
    if (f) await assertIndicator(`${step} (stop ${i + 1}: ${f.describe})`);
    if (f && wanted(f)) return f;
  }
  throw new Error(`${step}: not reached with ${TABS_MAX} presses of ${back ? 'Shift+Tab' : 'Tab'}`);
}

const field = (name) => (f) => f.name === name && f.type !== 'hidden';
const button = (text) => (f) => (f.tag === 'button' || f.tag === 'a') && f.text === text;

test('sign in with the keyboard', async () => {
  await page.goto(`${BASE}/app/sign-in`);
  // The name field has the focus on load (autofocus); from here on, only keys.
  await assertIndicator('sign-in name field');
  await page.keyboard.type('Kim Keyboard');
  await tabTo('to Sign in', button('Sign in'));
  await page.keyboard.press('Enter');
  await page.waitForURL(`${BASE}/app`);
});

test('create an event with the keyboard', async () => {
  // The first Tab on a page is the skip link, which leads to the content.
  const skip = await tabTo('skip link', (f) => f.tag === 'a');
  assert.equal(skip.text, 'Skip to content');
  await page.keyboard.press('Enter');
  await tabTo('to Name', field('name'));
  await page.keyboard.type('Keyboard Conf');
  await tabTo('to Date', field('date'));
  // Chromium's date field (en-US): month, day and year segments, typed in order.
  await page.keyboard.type('06122027');
  await tabTo('to Create event', button('Create event'));
  await page.keyboard.press('Enter');
  await page.waitForURL(/\/app\/events\/e_/);
  await page.getByRole('heading', { name: 'Keyboard Conf' }).first().waitFor();
});

test('add a room with the keyboard (Space on the button)', async () => {
  await tabTo('to Room name', (f) => f.id === 'room-name');
  await page.keyboard.type('Hall');
  await tabTo('to Seats', field('capacity'));
  await page.keyboard.type('80');
  await tabTo('to Add room', button('Add room'));
  await page.keyboard.press('Space');
  await page.waitForURL(/done=room-added/);
  await page.getByRole('cell', { name: 'Hall', exact: true }).waitFor();
});

test('publish through the confirmation page with the keyboard', async () => {
  // The page opens at the rooms section; Publish is above it.
  await tabTo('back to Publish', button('Publish'), { back: true });
  await page.keyboard.press('Enter');
  await page.locator('.confirm').waitFor();
  await shot(page, '11-keyboard-confirm');
  const keep = await tabTo('to Keep it', button('Keep it'));
  assert.equal(keep.tag, 'a');
  const yes = await tabTo('back to Yes', (f) => f.tag === 'button' && f.text.startsWith('Yes, '), { back: true });
  assert.match(yes.text, /^Yes, publish/);
  await page.keyboard.press('Enter');
  await page.waitForURL(/done=published/);
  await page.getByRole('link', { name: /\/e\/keyboard-conf/ }).waitFor();
  assert.deepEqual(page.errors, []);
});
