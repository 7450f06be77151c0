// AzulSim web view: written for this package (no third-party code).
// A job page follows its event stream and swaps in the parts the server rendered; a game page
// steps through its boards with the buttons, the slider and the keyboard.
"use strict";

function followJob(live) {
  const url = live.dataset.events;
  if (!url || live.dataset.finished === "true" || !window.EventSource) return;
  const status = document.getElementById("live-status");
  const source = new EventSource(url);
  source.addEventListener("update", (event) => {
    const parts = JSON.parse(event.data);
    if (parts.error) {
      status.textContent = "Live updates stopped: " + parts.error;
      return;
    }
    for (const [id, html] of Object.entries(parts.html || {})) {
      const target = document.getElementById(id);
      if (target) {
        // keep the configurations a reader opened or closed as they were
        const open = new Map([...target.querySelectorAll("details[id]")].map((d) => [d.id, d.open]));
        target.innerHTML = html;
        for (const [d, wasOpen] of open) {
          const again = document.getElementById(d);
          if (again) again.open = wasOpen;
        }
      }
    }
    live.dataset.updates = String(Number(live.dataset.updates || 0) + 1);
    if (parts.finished) status.textContent = "The job has ended.";
  });
  source.addEventListener("end", () => {
    source.close();  // else EventSource reconnects to a stream that has nothing more to say
    live.dataset.finished = "true";
    status.textContent = "The job has ended.";
  });
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED) status.textContent = "Live updates stopped.";
  };
}

function replayGame(replay) {
  const steps = [...replay.querySelectorAll("figure.step")];
  const slider = document.getElementById("slider");
  const label = document.getElementById("step-label");
  let current = 0;
  function show(i) {
    i = Math.max(0, Math.min(steps.length - 1, i));
    steps[current].hidden = true;
    steps[i].hidden = false;
    current = i;
    slider.value = String(i);
    label.textContent = `step ${i + 1} of ${steps.length}`;
    replay.dataset.current = String(i);
  }
  function round(direction) {
    const here = Number(steps[current].dataset.round);
    let i = current;
    while (i + direction >= 0 && i + direction < steps.length &&
           Number(steps[i + direction].dataset.round) === here) i += direction;
    show(i === current ? current + direction : i);
  }
  document.getElementById("first").onclick = () => show(0);
  document.getElementById("prev").onclick = () => show(current - 1);
  document.getElementById("next").onclick = () => show(current + 1);
  document.getElementById("last").onclick = () => show(steps.length - 1);
  slider.oninput = () => show(Number(slider.value));
  document.addEventListener("keydown", (event) => {
    if (event.target.tagName === "INPUT" && event.target !== slider) return;
    const keys = {
      ArrowRight: () => show(current + 1), ArrowLeft: () => show(current - 1),
      Home: () => show(0), End: () => show(steps.length - 1),
      PageDown: () => round(1), PageUp: () => round(-1),
    };
    if (keys[event.key]) {
      event.preventDefault();
      keys[event.key]();
    }
  });
  show(0);
}

document.addEventListener("DOMContentLoaded", () => {
  const live = document.getElementById("live");
  if (live) followJob(live);
  const replay = document.getElementById("replay");
  if (replay) replayGame(replay);
});
