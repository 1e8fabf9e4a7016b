// The host side of iframe mode:
//   1. the viewer page (index.html?embed=1) posts {dendro: {ready: true}};
//   2. the host posts {dendro: {buffer, name}} (the buffer is transferred);
//   3. the viewer answers {dendro: {opened: {name, ok, ...}}}.
// {dendro: {ping: true}} asks the viewer to repeat its ready message.
const frame = document.getElementById("frame");
const status = document.getElementById("status");
const src = new URLSearchParams(location.search).get("src") || "sample.dendro";
const viewerOrigin = new URL(frame.src, location.href).origin;

let sent = false;

window.addEventListener("message", async (ev) => {
  if (ev.source !== frame.contentWindow || ev.origin !== viewerOrigin) return;
  const msg = ev.data && ev.data.dendro;
  if (!msg) return;
  if (msg.ready && !sent) {
    sent = true;
    status.textContent = "viewer ready, sending the archive…";
    const buffer = await (await fetch(src)).arrayBuffer();
    const name = src.split("/").pop() || "archive.dendro";
    frame.contentWindow.postMessage({ dendro: { buffer, name } }, viewerOrigin, [buffer]);
  } else if (msg.opened) {
    const o = msg.opened;
    status.textContent = o.ok ? `opened ${o.name}` : `could not open ${o.name}: ${o.error.title}`;
    status.dataset.state = o.ok ? "ok" : "error";
  }
});

// If the viewer loaded before this script ran, its first "ready" was missed:
// ask again (a message to a frame still on about:blank is simply dropped).
frame.contentWindow.postMessage({ dendro: { ping: true } }, viewerOrigin);
