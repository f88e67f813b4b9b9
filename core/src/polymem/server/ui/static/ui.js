// polymem's web page: progressive enhancement only (every page works without it).
// Loaded as a module from /ui/static under `script-src 'self'`: no inline script, no eval.

const iso = (ms) => new Date(Number(ms)).toISOString().slice(0, 19);

// The time slider writes the moment it points at into the `as_of` field; letting go shows the store then.
for (const slider of document.querySelectorAll("input[data-as-of-slider]")) {
  const field = document.getElementById(slider.dataset.asOfSlider);
  if (!field) continue;
  if (field.value) {
    const chosen = Date.parse(field.value.endsWith("Z") || /[+-]\d\d:\d\d$/.test(field.value) ? field.value : field.value + "Z");
    if (!Number.isNaN(chosen)) slider.value = String(chosen);
  }
  slider.addEventListener("input", () => {
    field.value = Number(slider.value) >= Number(slider.max) ? "" : iso(slider.value);
  });
  slider.addEventListener("change", () => slider.form.requestSubmit());
}

// A select marked data-autosubmit submits its form when changed (the namespace switch).
for (const select of document.querySelectorAll("select[data-autosubmit]")) {
  select.addEventListener("change", () => select.form.requestSubmit());
}
