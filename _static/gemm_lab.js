// gemm_lab: a code cell's line (or a printed kernel's, as the exercises' skeletons) too long for the page wraps under a hanging indent, with a hook on every line it
// continues onto, as the kernel listings do (gemm_lab/pages/listings.py); a short string literal moves to the next
// line whole instead of splitting at one of its spaces. Each source line of the cell becomes a block of its own; the
// text is unchanged, newlines included (hidden), so the copy button copies the code as written.
document.addEventListener("DOMContentLoaded", () => {
  const KEEP_WHOLE = 60;  // characters: a string this long fits a line of the page (listings.KEEP_WHOLE)
  for (const pre of document.querySelectorAll("div.cell_input div.highlight pre, div.cell_output div.highlight pre")) {
    const lines = [[]];
    for (const node of Array.from(pre.childNodes)) {
      node.textContent.split("\n").forEach((part, i) => {
        if (i > 0) lines.push([]);
        if (!part) return;
        const piece = node.nodeType === Node.TEXT_NODE ? document.createTextNode(part) : node.cloneNode(false);
        piece.textContent = part;
        if (/^(s|s1|s2|sc)$/.test(piece.className) && part.length <= KEEP_WHOLE) piece.classList.add("keep");
        lines[lines.length - 1].push(piece);
      });
    }
    const closed = lines.length > 1 && !lines[lines.length - 1].length;  // the code ends with a newline: no empty line
    if (closed) lines.pop();
    pre.textContent = "";
    lines.forEach((parts, i) => {
      const line = document.createElement("span");
      line.className = "gl-line";
      const mark = document.createElement("span");
      mark.className = "gl-wrapped";
      line.append(mark, ...parts);
      if (i < lines.length - 1 || closed) {
        const newline = document.createElement("span");
        newline.className = "gl-newline";
        newline.textContent = "\n";
        line.append(newline);
      }
      pre.append(line);
    });
  }
});
