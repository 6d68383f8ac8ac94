// The export's only script. It loads nothing: it shows one branch of the session at a time (the current one at
// first), jumps to the branch of a node clicked in the tree, and searches every branch.
function setAll(open) {
  document.querySelectorAll('details').forEach(function (d) { d.open = open; });
}
(function () {
  var nodes = {}, links = {};
  var entries = document.getElementById('entries').children;
  for (var i = 0; i < entries.length; i++) nodes[entries[i].dataset.n] = entries[i];
  document.querySelectorAll('#side a[data-n]').forEach(function (a) { links[a.dataset.n] = a; });
  var limit = entries.length + 1;

  // Root to `n`, then on through the newest child at each step: the branch `n` is on.
  function branchOf(n) {
    var on = {}, k = n, steps = 0;
    while (nodes[k] && !on[k] && steps++ < limit) { on[k] = true; k = nodes[k].dataset.p; }
    k = nodes[n] ? nodes[n].dataset.next : undefined;
    while (nodes[k] && !on[k] && steps++ < 2 * limit) { on[k] = true; k = nodes[k].dataset.next; }
    return on;
  }

  function show(n, scroll) {
    var on = branchOf(n), k;
    for (k in nodes) nodes[k].hidden = !on[k];
    for (k in links) {
      links[k].classList.toggle('on-path', !!on[k]);
      links[k].classList.toggle('selected', k === n);
    }
    if (links[n]) links[n].scrollIntoView({ block: 'nearest' });
    if (scroll && nodes[n]) {
      nodes[n].scrollIntoView({ block: 'center' });
      nodes[n].classList.add('flash');
      setTimeout(function () { nodes[n].classList.remove('flash'); }, 1200);
    }
  }

  document.getElementById('side').addEventListener('click', function (ev) {
    var a = ev.target.closest('a[data-n]');
    if (!a) return;
    ev.preventDefault();
    show(a.dataset.n, true);
    history.replaceState(null, '', '#n' + a.dataset.n);
  });

  var input = document.getElementById('search');
  var status = document.getElementById('search-status');
  var idle = status.textContent, texts = {}, hits = [], at = -1;
  function text(k) {
    if (!(k in texts)) texts[k] = nodes[k].textContent.toLowerCase();
    return texts[k];
  }
  input.addEventListener('input', function () {
    var q = input.value.trim().toLowerCase(), k, m;
    hits = []; at = -1;
    for (k in links) {
      m = q !== '' && text(k).indexOf(q) >= 0;
      links[k].classList.toggle('match', m);
      links[k].classList.toggle('dim', q !== '' && !m);
      if (m) hits.push(k);
    }
    for (k in nodes) nodes[k].classList.toggle('hit', q !== '' && text(k).indexOf(q) >= 0);
    status.textContent = q === '' ? idle
      : hits.length + (hits.length === 1 ? ' match' : ' matches') + (hits.length ? ' · Enter for the next' : '');
  });
  input.addEventListener('keydown', function (ev) {
    if (ev.key !== 'Enter' || hits.length === 0) return;
    ev.preventDefault();
    at = (at + (ev.shiftKey ? hits.length - 1 : 1)) % hits.length;
    show(hits[at], true);
    status.textContent = (at + 1) + ' of ' + hits.length + ' matches';
  });

  // A link can name a node (`#n12`) or a search (`#search=text`).
  var hash = /^#n(\d+)$/.exec(location.hash);
  if (hash && nodes[hash[1]]) show(hash[1], true);
  var search = /^#search=(.*)$/.exec(location.hash);
  if (search) {
    input.value = decodeURIComponent(search[1]);
    input.dispatchEvent(new Event('input'));
  }
})();
