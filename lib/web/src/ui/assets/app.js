// Steward's one page script: no inline handlers (the CSP forbids inline script), no
// framework, and text always goes in through textContent, never innerHTML.
//
// The chat page (#chat): reads the conversation from the chat API
// (GET /api/chat/messages?after=N), sends messages and button clicks
// (POST, with the session's CSRF token from <meta name="csrf-token"> as X-CSRF-Token),
// shows "Working…" while a turn runs, and polls every second while working, every few
// seconds otherwise.
(function () {
  "use strict";

  var root = document.getElementById("chat");
  if (!root) {
    return;
  }

  var POLL_WORKING_MS = 1000;
  var POLL_IDLE_MS = 5000;
  // Stop waiting for a reply the server has not started after this long (a lost message).
  var AWAIT_REPLY_MAX_MS = 120000;

  var api = root.getAttribute("data-api");
  var meta = document.querySelector('meta[name="csrf-token"]');
  var csrf = meta ? meta.getAttribute("content") : "";
  var log = document.getElementById("chat-log");
  var empty = document.getElementById("chat-empty");
  var working = document.getElementById("chat-working");
  var errorBox = document.getElementById("chat-error");
  var form = document.getElementById("chat-form");
  var input = document.getElementById("chat-text");
  var sendButton = document.getElementById("chat-send");

  var after = 0; // position of the last message shown
  var serverWorking = false; // a turn is running
  var awaiting = null; // { after: n, at: ms } after sending, until a reply shows up
  var timer = null;
  var polling = false;
  var stopped = false;
  var draftId = null; // the id of the text in the box, kept so a retried send is deduplicated

  function newId() {
    if (window.crypto && typeof window.crypto.randomUUID === "function") {
      return window.crypto.randomUUID();
    }
    return Date.now().toString(36) + "-" + Math.random().toString(36).slice(2, 12);
  }

  function showError(text) {
    errorBox.textContent = text || "";
    errorBox.hidden = !text;
  }

  function isWorking() {
    return serverWorking || (awaiting !== null && Date.now() - awaiting.at < AWAIT_REPLY_MAX_MS);
  }

  function updateWorking() {
    working.hidden = !isWorking();
  }

  function schedule(ms) {
    if (stopped) {
      return;
    }
    if (timer !== null) {
      window.clearTimeout(timer);
    }
    timer = window.setTimeout(poll, ms);
  }

  function render(m) {
    if (empty) {
      empty.remove();
      empty = null;
    }
    var div = document.createElement("div");
    div.className = "msg " + (m.role === "user" ? "user" : "assistant");
    if (m.text) {
      var p = document.createElement("p");
      p.textContent = m.text;
      div.appendChild(p);
    }
    if (m.reaction) {
      var r = document.createElement("p");
      r.className = "reaction";
      r.textContent = m.reaction;
      r.setAttribute("aria-label", "Reaction " + m.reaction);
      div.appendChild(r);
    }
    if (m.buttons && m.buttons.length) {
      var row = document.createElement("div");
      row.className = "buttons";
      m.buttons.forEach(function (b) {
        var button = document.createElement("button");
        button.type = "button";
        button.className = "secondary";
        button.textContent = b.title;
        button.addEventListener("click", function () {
          row.querySelectorAll("button").forEach(function (each) {
            each.disabled = true;
          });
          send({ button: { id: b.id, title: b.title } }, newId(), function (ok) {
            if (!ok) {
              row.querySelectorAll("button").forEach(function (each) {
                each.disabled = false;
              });
            }
          });
        });
        row.appendChild(button);
      });
      div.appendChild(row);
    }
    log.appendChild(div);
  }

  function poll() {
    timer = null;
    if (polling || stopped) {
      return;
    }
    polling = true;
    fetch(api + "?after=" + after, {
      credentials: "same-origin",
      headers: { Accept: "application/json" },
    })
      .then(function (res) {
        if (res.status === 401) {
          stopped = true;
          throw new Error("You have been signed out. Reload the page to sign in again.");
        }
        if (!res.ok) {
          throw new Error("Could not load the conversation; trying again.");
        }
        return res.json();
      })
      .then(function (data) {
        var added = false;
        (data.messages || []).forEach(function (m) {
          if (m.n <= after) {
            return;
          }
          render(m);
          added = true;
          after = m.n;
          if (m.role === "assistant" && awaiting !== null && m.n > awaiting.after) {
            awaiting = null;
          }
        });
        if (added) {
          log.scrollTop = log.scrollHeight;
          window.scrollTo(0, document.body.scrollHeight);
        }
        serverWorking = !!data.working;
        if (awaiting !== null && Date.now() - awaiting.at >= AWAIT_REPLY_MAX_MS) {
          awaiting = null;
        }
        showError("");
        updateWorking();
        polling = false;
        schedule(data.more ? 0 : isWorking() ? POLL_WORKING_MS : POLL_IDLE_MS);
      })
      .catch(function (e) {
        polling = false;
        showError(e.message);
        schedule(POLL_IDLE_MS);
      });
  }

  // Posts one message; done(ok) is called when the server answered.
  function send(payload, id, done) {
    payload.id = id;
    showError("");
    fetch(api, {
      method: "POST",
      credentials: "same-origin",
      headers: {
        "Content-Type": "application/json",
        Accept: "application/json",
        "X-CSRF-Token": csrf,
      },
      body: JSON.stringify(payload),
    })
      .then(function (res) {
        return res
          .json()
          .catch(function () {
            return {};
          })
          .then(function (data) {
            if (res.status === 202) {
              awaiting = { after: after, at: Date.now() };
              updateWorking();
              schedule(0);
              done(true);
              return;
            }
            if (res.status === 401) {
              showError("You have been signed out. Reload the page to sign in again.");
            } else if (res.status === 403) {
              showError("This page has expired. Reload it and send again.");
            } else {
              showError(data.error || "The message could not be sent. Please try again.");
            }
            done(false);
          });
      })
      .catch(function () {
        showError("Could not reach Steward. Check your connection and send again.");
        done(false);
      });
  }

  input.addEventListener("input", function () {
    draftId = null; // different text: a new message
  });

  input.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      form.requestSubmit();
    }
  });

  form.addEventListener("submit", function (e) {
    e.preventDefault();
    var text = input.value.trim();
    if (!text) {
      showError("Type a message first.");
      return;
    }
    if (draftId === null) {
      draftId = newId();
    }
    sendButton.disabled = true;
    send({ text: text }, draftId, function (ok) {
      sendButton.disabled = false;
      if (ok) {
        input.value = "";
        draftId = null;
      }
      input.focus();
    });
  });

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden) {
      schedule(0);
    }
  });

  poll();
})();
