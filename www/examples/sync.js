// Two viewers in one sync group: a cursor moved, or a window dragged, in
// one is the other's too. Only the status line and ?src= need this script.
const status = document.getElementById("status");
const views = [document.getElementById("left"), document.getElementById("right")];
const opened = [];

for (const el of views) {
  el.addEventListener("dendro-open", (ev) => {
    const r = ev.detail;
    opened.push(r);
    if (!r.ok) {
      status.textContent = `could not open ${r.name}: ${r.error.title}`;
      status.dataset.state = "error";
    } else if (opened.length === views.length && opened.every((o) => o.ok)) {
      status.textContent = "both open: move the cursor over either";
      status.dataset.state = "ok";
    }
  });
}

// Both open sample.dendro (what `dendro serve` offers first) unless given ?src=A&src=B.
const srcs = new URLSearchParams(location.search).getAll("src");
views.forEach((el, i) => el.setAttribute("src", srcs[i] ?? srcs[0] ?? "sample.dendro"));
