// The waiting page's script (FS-12, FS-13, FS-20). Static: the sale comes from the URL
// fragment. It polls the global "serving up to P" (cacheable, the same for everyone) and asks
// its own admission (never cached) only once at join and again when P reaches its position —
// the AWS VWR split that keeps per-entrant calls off the peak.

(() => {
  const params = new URLSearchParams(location.hash.slice(1));
  const sale = params.get("sale");
  const user = params.get("user") || `web-${crypto.getRandomValues(new Uint32Array(2)).join("")}`;
  const $ = (id) => document.getElementById(id);
  const show = (id, on) => {
    $(id).hidden = !on;
  };
  const say = (text) => {
    $("state").textContent = text;
  };
  const api = async (method, path, body, headers = {}) => {
    const res = await fetch(path, {
      method,
      headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error(json.detail || json.title || `HTTP ${res.status}`);
    return json;
  };
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const minutes = (ms) => (ms < 60_000 ? `${Math.ceil(ms / 1000)} s` : `${Math.ceil(ms / 60_000)} min`);
  let secret;
  let token;

  async function admission() {
    const a = await api("POST", `/v1/sales/${sale}/entrants/${user}/admission`, undefined, {
      "x-entrant-secret": secret,
    });
    if (a.state === "admitted") token = a.token;
    if (a.position !== null) {
      $("position").textContent = a.position;
      $("ahead").textContent = a.ahead;
      $("wait").textContent = minutes(a.estimatedWaitMs);
    }
    return a;
  }

  async function waitForTurn() {
    let a = await admission();
    while (a.state !== "admitted") {
      show("queue", true);
      say(
        a.state === "pre-queue"
          ? "The sale has not opened yet: places are drawn at the opening."
          : "You are in line.",
      );
      await sleep(1000);
      const room = await api("GET", `/v1/sales/${sale}/room`);
      $("serving").textContent = room.servingUpTo;
      if (a.position === null || room.servingUpTo >= a.position) a = await admission();
    }
    show("queue", false);
    show("checkout", true);
    say("Your turn.");
  }

  async function buy() {
    const auth = { authorization: `Bearer ${token}`, "x-entrant-secret": secret };
    const hold = await api("POST", `/v1/sales/${sale}/holds`, { quantity: 1 }, auth);
    show("checkout", false);
    $("numbers").textContent = hold.numbers.join(", ");
    $("expires").textContent = new Date(hold.expiresAt).toLocaleTimeString();
    show("hold", true);
    say("Reserved.");
    $("pay").onclick = () => pay(hold.id).catch(fail);
  }

  async function pay(holdId) {
    let h = await api("POST", `/v1/holds/${holdId}/pay`);
    show("hold", false);
    // FS-15: while the processor works, the buyer reads a message, not an error.
    for (let i = 0; i < 600 && h.state === "charging"; i++) {
      say(h.message || "Payment processing…");
      await sleep(500);
      h = await api("GET", `/v1/holds/${holdId}`);
    }
    if (h.state !== "paid") throw new Error(h.message || `payment ${h.state}`);
    $("order").textContent = h.order?.paymentId ?? holdId;
    show("paid", true);
    say("Done.");
  }

  async function solve(challenge, bits) {
    const enc = new TextEncoder();
    for (let nonce = 0; nonce < 1 << 28; nonce++) {
      const d = new Uint8Array(await crypto.subtle.digest("SHA-256", enc.encode(`${challenge}:${nonce}`)));
      let left = bits;
      let ok = true;
      for (const byte of d) {
        if (left <= 0) break;
        if (left >= 8) {
          if (byte !== 0) {
            ok = false;
            break;
          }
          left -= 8;
          continue;
        }
        ok = byte >> (8 - left) === 0;
        break;
      }
      if (ok) return String(nonce);
    }
    throw new Error("could not solve the challenge");
  }

  function fail(error) {
    $("error").textContent = error.message;
  }

  async function start() {
    if (!sale) throw new Error("no sale in the address (#sale=…)");
    $("sale").textContent = sale;
    // FS-14: a proof of work before join when the sale asks for one (bits > 0).
    const c = await api("POST", `/v1/sales/${sale}/challenge`, { user });
    const join = { user };
    if (c.bits > 0) {
      say("Checking your browser…");
      join.challenge = c.challenge;
      join.nonce = await solve(c.challenge, c.bits);
    }
    const joined = await api("POST", `/v1/sales/${sale}/entrants`, join);
    secret = joined.secret || sessionStorage.getItem(`secret:${sale}:${user}`);
    if (!secret) throw new Error("this user joined elsewhere; its secret is not here");
    sessionStorage.setItem(`secret:${sale}:${user}`, secret);
    await waitForTurn();
    $("buy").onclick = () => buy().catch(fail);
  }

  start().catch(fail);
})();
