// Only needed for the status line and ?src=: the element itself works from
// the markup alone once dendro-viewer.js is loaded.
const el = document.getElementById("viewer");
const status = document.getElementById("status");

el.addEventListener("dendro-open", (ev) => {
  const r = ev.detail;
  status.textContent = r.ok ? `opened ${r.name}` : `could not open ${r.name}: ${r.error.title}`;
  status.dataset.state = r.ok ? "ok" : "error";
});

const src = new URLSearchParams(location.search).get("src");
if (src) el.setAttribute("src", src);
