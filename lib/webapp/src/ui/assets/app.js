// Steward's one page script: no inline handlers (the CSP forbids inline script), no
// framework, and text always goes in through textContent, never innerHTML.
//
// The chat page (#chat): reads the newest page of the conversation from the chat API
// (GET /api/chat/messages), older pages when "Earlier messages" is pressed (?before=N), then
// polls for what comes after (?after=N); sends messages and button clicks
// (POST, with the session's CSRF token from <meta name="csrf-token"> as X-CSRF-Token),
// shows "Working…" while a turn runs, and polls every second while working. Idle, it polls
// after 5 s, then waits twice as long each time nothing new came (up to a minute); it does not
// poll at all while the tab is hidden, and polls at once when the tab is shown again or the
// window gets focus (each poll is a function call and several table reads). Screen readers hear new messages through the log's live region (each
// starts with a hidden "You:" or "Steward:") and "Working…" through a status region whose text
// changes (it is never hidden, only emptied).
//
// Every page: after a form came back with a problem, the field at fault (named by the
// error's data-field, or the form's only field) is marked aria-invalid, described by the
// error, and focused.
(function () {
  "use strict";

  var root = document.getElementById("chat");
  if (!root) {
    return;
  }

  var POLL_WORKING_MS = 1000;
  // Idle polling backs off from the first to the last interval, doubling while nothing changes.
  var POLL_IDLE_MIN_MS = 5000;
  var POLL_IDLE_MAX_MS = 60000;
  var idleMs = POLL_IDLE_MIN_MS;
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
  var earlierButton = document.getElementById("chat-earlier");

  var after = 0; // position of the last message shown
  var first = 0; // position of the first message shown (0: none yet)
  var loaded = false; // the newest page has been read; from then on, poll ?after=
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

  var WORKING_TEXT = "Working\u2026";

  function updateWorking() {
    var text = isWorking() ? WORKING_TEXT : "";
    if (working.textContent !== text) {
      working.textContent = text;
    }
  }

  // The next idle wait; each one doubles the next, up to POLL_IDLE_MAX_MS.
  function nextIdle() {
    var ms = idleMs;
    idleMs = Math.min(idleMs * 2, POLL_IDLE_MAX_MS);
    return ms;
  }

  function resetIdle() {
    idleMs = POLL_IDLE_MIN_MS;
  }

  // Polls after ms, unless the tab is hidden: then nothing is scheduled until it is shown.
  function schedule(ms) {
    if (stopped) {
      return;
    }
    if (timer !== null) {
      window.clearTimeout(timer);
      timer = null;
    }
    if (document.hidden) {
      return;
    }
    timer = window.setTimeout(poll, ms);
  }

  // The reply markup, parsed by the server into lines of styled spans (see
  // steward_channels::markup), built as DOM nodes: text only through text nodes, links only
  // to http(s) addresses.
  function safeHref(url) {
    try {
      var u = new URL(url);
      return u.protocol === "http:" || u.protocol === "https:" ? u.href : null;
    } catch (e) {
      return null;
    }
  }

  function spanNode(s) {
    var node = document.createTextNode(s.text || "");
    var href = s.link ? safeHref(s.link) : null;
    if (href) {
      var a = document.createElement("a");
      a.href = href;
      a.rel = "noopener noreferrer";
      a.appendChild(node);
      node = a;
    }
    if (s.italic) {
      var em = document.createElement("em");
      em.appendChild(node);
      node = em;
    }
    if (s.bold) {
      var strong = document.createElement("strong");
      strong.appendChild(node);
      node = strong;
    }
    return node;
  }

  function appendSpans(parent, line) {
    (line.spans || []).forEach(function (s) {
      parent.appendChild(spanNode(s));
    });
  }

  // Consecutive bullet lines become a list, numbered lines an ordered list, other lines
  // paragraphs (lines of one paragraph separated by line breaks; a blank line ends it).
  function renderDoc(div, doc) {
    var p = null;
    var list = null;
    var listKind = null;
    doc.lines.forEach(function (line) {
      var kind = (line.marker && line.marker.kind) || "none";
      if (kind !== "bullet" && kind !== "numbered") {
        list = null;
        var blank = (line.spans || []).every(function (s) {
          return !s.link && !(s.text || "").trim();
        });
        if (blank) {
          p = null;
          return;
        }
        if (p) {
          p.appendChild(document.createElement("br"));
        } else {
          p = document.createElement("p");
          div.appendChild(p);
        }
        appendSpans(p, line);
        return;
      }
      p = null;
      if (!list || listKind !== kind) {
        list = document.createElement(kind === "bullet" ? "ul" : "ol");
        listKind = kind;
        div.appendChild(list);
      }
      var li = document.createElement("li");
      if (kind === "numbered" && typeof line.marker.number === "number") {
        li.value = line.marker.number;
      }
      appendSpans(li, line);
      list.appendChild(li);
    });
  }

  function render(m) {
    log.appendChild(build(m));
  }

  // Shows the earlier-messages button when the server says older messages exist.
  function showEarlier(earlier) {
    earlierButton.hidden = !(earlier && first > 0);
  }

  // Reads the page before the first message shown and puts it above, keeping the view still.
  function loadEarlier() {
    earlierButton.disabled = true;
    fetch(api + "?before=" + first, {
      credentials: "same-origin",
      headers: { Accept: "application/json" },
    })
      .then(function (res) {
        if (!res.ok) {
          throw new Error("Could not load earlier messages; press the button again.");
        }
        return res.json();
      })
      .then(function (data) {
        var height = log.scrollHeight;
        var top = log.firstChild;
        var messages = data.messages || [];
        messages.forEach(function (m) {
          if (m.n < first) {
            log.insertBefore(build(m), top);
          }
        });
        if (messages.length) {
          first = Math.min(first, messages[0].n);
        }
        log.scrollTop += log.scrollHeight - height;
        earlierButton.disabled = false;
        showEarlier(!!data.earlier);
      })
      .catch(function (e) {
        earlierButton.disabled = false;
        showError(e.message);
      });
  }

  earlierButton.addEventListener("click", loadEarlier);

  function build(m) {
    if (empty) {
      empty.remove();
      empty = null;
    }
    var div = document.createElement("div");
    div.className = "msg " + (m.role === "user" ? "user" : "assistant");
    var who = document.createElement("span");
    who.className = "visually-hidden";
    who.textContent = m.role === "user" ? "You: " : "Steward: ";
    if (m.doc && m.doc.lines && m.doc.lines.length) {
      div.appendChild(who);
      renderDoc(div, m.doc);
    } else if (m.text) {
      var p = document.createElement("p");
      p.appendChild(who);
      p.appendChild(document.createTextNode(m.text));
      div.appendChild(p);
    } else {
      div.appendChild(who);
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
            // The pressed button is now disabled: keep the keyboard focus somewhere useful.
            if (document.activeElement === null || document.activeElement === document.body || document.activeElement.disabled) {
              input.focus();
            }
          });
        });
        row.appendChild(button);
      });
      div.appendChild(row);
    }
    return div;
  }

  function poll() {
    timer = null;
    if (polling || stopped || document.hidden) {
      return;
    }
    polling = true;
    fetch(loaded ? api + "?after=" + after : api, {
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
          if (first === 0) {
            first = m.n;
          }
          if (m.role === "assistant" && awaiting !== null && m.n > awaiting.after) {
            awaiting = null;
          }
        });
        if (added) {
          log.scrollTop = log.scrollHeight;
          window.scrollTo(0, document.body.scrollHeight);
        }
        if (!loaded) {
          loaded = true;
          showEarlier(!!data.earlier);
        }
        serverWorking = !!data.working;
        if (awaiting !== null && Date.now() - awaiting.at >= AWAIT_REPLY_MAX_MS) {
          awaiting = null;
        }
        showError("");
        updateWorking();
        polling = false;
        if (added || isWorking()) {
          resetIdle();
        }
        schedule(data.more ? 0 : isWorking() ? POLL_WORKING_MS : nextIdle());
      })
      .catch(function (e) {
        polling = false;
        showError(e.message);
        schedule(nextIdle());
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
              resetIdle();
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

  // Shown again (or focused): catch up at once and poll briskly again. Hidden: schedule()
  // clears the pending poll and sets none.
  function wake() {
    resetIdle();
    schedule(0);
  }

  document.addEventListener("visibilitychange", function () {
    if (document.hidden) {
      schedule(0);
    } else {
      wake();
    }
  });
  window.addEventListener("focus", wake);

  poll();
})();

// Every page: a form that came back with a problem. The server draws the problem as
// <p class="error" role="alert" id=… data-field=…> just before its form (or before a block
// holding it). The field named by data-field is marked aria-invalid and described by the
// problem, and the first such field takes the focus, so a screen reader reads the field with
// its problem and a keyboard user is where the fix goes. A problem blaming no field of its
// form takes the focus itself instead (when no field does).
(function () {
  "use strict";

  function formAfter(error) {
    for (var el = error.nextElementSibling; el; el = el.nextElementSibling) {
      if (el.tagName === "FORM") {
        return el;
      }
      var inside = el.querySelector("form");
      if (inside) {
        return inside;
      }
    }
    return null;
  }

  function fieldOf(form, name) {
    if (!form || !name) {
      return null;
    }
    for (var i = 0; i < form.elements.length; i += 1) {
      var el = form.elements[i];
      if (el.name === name && el.type !== "hidden" && !el.disabled) {
        return el;
      }
    }
    return null;
  }

  var firstField = null;
  var firstError = null;
  var errors = document.querySelectorAll("p.error[role=alert][id]");
  for (var i = 0; i < errors.length; i += 1) {
    var error = errors[i];
    if (error.hidden || !error.textContent.trim()) {
      continue;
    }
    var field = fieldOf(formAfter(error), error.getAttribute("data-field"));
    if (field) {
      field.setAttribute("aria-invalid", "true");
      var described = field.getAttribute("aria-describedby");
      field.setAttribute("aria-describedby", described ? described + " " + error.id : error.id);
      firstField = firstField || field;
    } else {
      firstError = firstError || error;
    }
  }
  if (firstField) {
    var details = firstField.closest("details");
    if (details) {
      details.open = true;
    }
    firstField.focus();
  } else if (firstError) {
    firstError.tabIndex = -1;
    firstError.focus();
  }
})();
