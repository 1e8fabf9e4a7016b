// Embedding with the ES module: mountViewer(element, { url | file | bytes }).
import { mountViewer } from "../dendro-viewer.js";

const src = new URLSearchParams(location.search).get("src") || "sample.dendro";
const status = document.getElementById("status");

function report(r) {
  if (!r) return;
  status.textContent = r.ok
    ? `opened ${r.name}: ${r.description.sources.length} source(s)`
    : `could not open ${r.name}: ${r.error.title}`;
  status.dataset.state = r.ok ? "ok" : "error";
}

// 1. From a URL (fetched with a progress bar inside the viewer).
const viewer = mountViewer(document.getElementById("viewer"), { url: src, onOpen: report });

// 2. From a File the host page already has.
document.getElementById("pick").addEventListener("change", (ev) => {
  const file = ev.target.files && ev.target.files[0];
  if (file) viewer.open({ file });
});

// 3. From bytes the host page fetched or built itself (they are copied, the
//    host's buffer stays usable).
document.getElementById("as-bytes").addEventListener("click", async () => {
  const bytes = new Uint8Array(await (await fetch(src)).arrayBuffer());
  await viewer.open({ bytes, name: "sample (bytes).dendro" });
  status.dataset.bytesLeft = String(bytes.byteLength);
});
