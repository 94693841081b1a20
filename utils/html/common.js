  /* ---- shared by the pages (utils/html/common.js) --------------------------------- */

  const $ = (id) => document.getElementById(id);
  // The page's data: the JSON document the tool put in the #pyprof-data script element.
  function pageData() {
    return JSON.parse($('pyprof-data').textContent);
  }
  // A name's 32-bit FNV-1a hash: a name gets the same hue wherever it is drawn.
  function hashHue(str) {
    let h = 2166136261;
    for (let i = 0; i < str.length; i++) h = Math.imul(h ^ str.charCodeAt(i), 16777619);
    return (h >>> 0);
  }
  // The tooltip, the #tip element: `text` beside the pointer, inside the window.
  function showTip(ev, text) {
    const tip = $('tip');
    tip.textContent = text;
    tip.style.display = 'block';
    const w = tip.offsetWidth;
    tip.style.left = Math.min(ev.clientX + 12, window.innerWidth - w - 4) + 'px';
    tip.style.top = (ev.clientY + 14) + 'px';
  }
  function hideTip() {
    $('tip').style.display = 'none';
  }
