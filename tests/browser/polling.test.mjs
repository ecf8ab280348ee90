// The web chat's polling schedule, without a browser or a server: the web app's app.js (lib/webapp) runs in a
// node:vm context with a minimal DOM, a fake fetch that answers like the chat API, and a
// virtual clock, so the test reads exactly when each poll would go out. Checks: idle polls
// back off (5 s doubling up to 60 s), a hidden tab polls not at all, showing it (or focusing
// the window) polls at once and starts the back-off again, and a running turn polls every
// second; the first read asks for the newest page, later polls for what came after, and
// "Earlier messages" asks for the page before the first message shown. Run by infra/browser-tests.sh with the others (`node --test tests/browser/`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import vm from 'node:vm';

const SCRIPT = readFileSync(new URL('../../lib/webapp/src/ui/assets/app.js', import.meta.url), 'utf8');

function element(id) {
  const listeners = {};
  return {
    id,
    hidden: false,
    textContent: '',
    children: [],
    attributes: { 'data-api': '/api/chat/messages' },
    getAttribute(name) { return this.attributes[name] ?? null; },
    setAttribute(name, value) { this.attributes[name] = String(value); },
    appendChild(child) { this.children.push(child); return child; },
    insertBefore(child) { this.children.unshift(child); return child; },
    get firstChild() { return this.children[0] ?? null; },
    scrollHeight: 0,
    scrollTop: 0,
    remove() {},
    focus() {},
    querySelectorAll() { return []; },
    addEventListener(type, fn) { (listeners[type] ||= []).push(fn); },
    dispatch(type, event = {}) { (listeners[type] || []).forEach((fn) => fn(event)); },
  };
}

// One page load: returns the controls of its world.
function load(initial = {}) {
  let now = 0;
  let timers = [];
  let nextId = 1;
  const polls = []; // virtual times at which GET polls went out
  const server = { working: false, messages: [], earlier: undefined, older: [] };
  Object.assign(server, initial);
  const urls = []; // every GET's URL, in order
  const docListeners = {};
  const winListeners = {};
  const elements = {};
  const document = {
    hidden: false,
    getElementById(id) { return (elements[id] ||= element(id)); },
    querySelector() { return null; },
    querySelectorAll() { return []; },
    createElement(tag) { return element(tag); },
    createTextNode(text) { return { textContent: text }; },
    addEventListener(type, fn) { (docListeners[type] ||= []).push(fn); },
    body: { scrollHeight: 0 },
    activeElement: null,
  };
  const window = {
    setTimeout(fn, ms) { const id = nextId++; timers.push({ id, at: now + ms, fn }); return id; },
    clearTimeout(id) { timers = timers.filter((t) => t.id !== id); },
    addEventListener(type, fn) { (winListeners[type] ||= []).push(fn); },
    scrollTo() {},
    crypto: { randomUUID: () => `id-${nextId++}` },
  };
  const fetch = (url, options = {}) => {
    if ((options.method || 'GET') === 'GET') {
      urls.push(url);
      if (url.includes('?before=')) {
        const body = { messages: server.older.splice(0), working: server.working, more: false, earlier: false };
        return Promise.resolve({ ok: true, status: 200, json: () => Promise.resolve(body) });
      }
      polls.push(now);
      const body = { messages: server.messages.splice(0), working: server.working, more: false };
      if (server.earlier !== undefined) {
        body.earlier = server.earlier;
        server.earlier = undefined;
      }
      return Promise.resolve({ ok: true, status: 200, json: () => Promise.resolve(body) });
    }
    return Promise.resolve({ ok: true, status: 202, json: () => Promise.resolve({}) });
  };
  const context = { window, document, fetch, Date: { now: () => now }, Math, JSON, Promise, console };
  vm.createContext(context);
  vm.runInContext(SCRIPT, context);

  const settle = () => new Promise((resolve) => setImmediate(resolve));
  return {
    polls,
    server,
    urls,
    element: (id) => document.getElementById(id),
    pending: () => timers.length,
    // Runs the virtual clock forward by ms, firing timers (and the fetches they start) in order.
    async advance(ms) {
      const end = now + ms;
      await settle();
      for (;;) {
        timers.sort((a, b) => a.at - b.at);
        const t = timers[0];
        if (!t || t.at > end) break;
        timers.shift();
        now = t.at;
        t.fn();
        await settle();
      }
      now = end;
    },
    async setHidden(hidden) {
      document.hidden = hidden;
      (docListeners.visibilitychange || []).forEach((fn) => fn({}));
      await settle();
    },
    async focus() {
      (winListeners.focus || []).forEach((fn) => fn({}));
      await settle();
    },
  };
}

function gaps(times) {
  return times.slice(1).map((t, i) => t - times[i]);
}

test('idle polls back off from 5 s, doubling to a minute', async () => {
  const page = load();
  await page.advance(400000);
  assert.equal(page.polls[0], 0, 'the first poll goes out at once');
  assert.deepEqual(gaps(page.polls).slice(0, 8), [5000, 10000, 20000, 40000, 60000, 60000, 60000, 60000]);
});

test('a hidden tab does not poll; showing it polls at once and restarts the back-off', async () => {
  const page = load();
  await page.advance(40000); // polls at 0, 5 s, 15 s, 35 s
  assert.equal(page.polls.length, 4);
  await page.setHidden(true);
  assert.equal(page.pending(), 0, 'nothing is scheduled while hidden');
  await page.advance(3600000);
  assert.equal(page.polls.length, 4, 'an hour hidden: no poll');
  await page.setHidden(false);
  await page.advance(0);
  assert.equal(page.polls.length, 5, 'shown: polled at once');
  const shownAt = page.polls[4];
  await page.advance(20000);
  assert.deepEqual(page.polls.slice(4).map((t) => t - shownAt), [0, 5000, 15000], 'back to 5 s, then 10 s');
});

test('focusing the window polls at once', async () => {
  const page = load();
  await page.advance(100000); // deep into the back-off
  const before = page.polls.length;
  await page.focus();
  await page.advance(0);
  assert.equal(page.polls.length, before + 1);
});

test('while a turn runs it polls every second, and a new message resets the back-off', async () => {
  const page = load();
  await page.advance(40000);
  page.server.working = true;
  await page.focus();
  await page.advance(3500);
  const start = page.polls.length;
  await page.advance(3000);
  assert.deepEqual(gaps(page.polls.slice(start - 1)), [1000, 1000, 1000]);
  page.server.working = false;
  page.server.messages.push({ n: 1, role: 'assistant', text: 'Done.' });
  const replyPoll = page.polls.length; // the next poll brings the reply
  await page.advance(17000);
  assert.deepEqual(gaps(page.polls.slice(replyPoll)), [5000, 10000], 'idle again from 5 s');
});

test('a message arriving while idle brings the interval back to 5 s', async () => {
  const page = load();
  await page.advance(200000); // polls at 0, 5, 15, 35, 75, 135, 195 s: the next wait is 60 s
  page.server.messages.push({ n: 1, role: 'assistant', text: 'A reminder.' });
  const arrival = page.polls.length; // the next poll brings it
  await page.advance(100000);
  assert.deepEqual(gaps(page.polls.slice(arrival)), [5000, 10000, 20000]);
});

test('the first read is the newest page; earlier pages load on request, polls read what came after', async () => {
  const page = load({
    messages: [{ n: 22600, role: 'user', text: 'q226' }, { n: 25002, role: 'assistant', text: 'a250' }],
    earlier: true,
  });
  await page.advance(0);
  assert.equal(page.urls[0], '/api/chat/messages', 'no position: the newest page');
  const button = page.element('chat-earlier');
  assert.equal(button.hidden, false, 'older messages exist: the button shows');
  await page.advance(5000);
  assert.equal(page.urls[1], '/api/chat/messages?after=25002');
  const log = page.element('chat-log');
  const shown = log.children.length;
  page.server.older.push({ n: 22502, role: 'assistant', text: 'a225' });
  button.dispatch('click');
  await page.advance(0);
  assert.equal(page.urls[2], '/api/chat/messages?before=22600');
  assert.equal(log.children.length, shown + 1, 'the older message is put above');
  assert.equal(button.hidden, true, 'nothing earlier: the button hides');
});
