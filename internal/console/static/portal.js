// hookd's portal for a producer's page, zero dependencies:
//
//   <script src="https://hooks.example.com/portal.js" defer></script>
//   <hookd-portal src="https://hooks.example.com/portal/<one-time link>"></hookd-portal>
//
// The element makes the iframe and keeps it as tall as the portal's page:
// the page posts its height, and only a message from that iframe, from
// hookd's origin, is believed. The portal posts only to the origins the
// operator and the owner allowed to frame it.
(function () {
  "use strict";
  if (!window.customElements || window.customElements.get("hookd-portal")) return;
  var HookdPortal = function () { return Reflect.construct(HTMLElement, [], HookdPortal); };
  HookdPortal.prototype = Object.create(HTMLElement.prototype);
  HookdPortal.prototype.constructor = HookdPortal;
  Object.setPrototypeOf(HookdPortal, HTMLElement);
  HookdPortal.prototype.connectedCallback = function () {
    if (this.frame) return;
    var src = this.getAttribute("src");
    if (!src) return;
    var origin = new URL(src, location.href).origin;
    var frame = document.createElement("iframe");
    frame.src = src;
    frame.title = this.getAttribute("title") || "webhooks";
    frame.style.border = "0";
    frame.style.width = "100%";
    frame.style.display = "block";
    frame.style.height = (parseInt(this.getAttribute("min-height"), 10) || 480) + "px";
    this.frame = frame;
    this.onMessage = function (ev) {
      if (ev.origin !== origin || ev.source !== frame.contentWindow) return;
      var d = ev.data;
      if (!d || d.type !== "hookd-portal:height" || typeof d.height !== "number" || !isFinite(d.height)) return;
      frame.style.height = Math.max(120, Math.min(Math.ceil(d.height), 20000)) + "px";
      frame.setAttribute("data-sized", "");
    };
    window.addEventListener("message", this.onMessage);
    this.appendChild(frame);
  };
  HookdPortal.prototype.disconnectedCallback = function () {
    window.removeEventListener("message", this.onMessage);
  };
  window.customElements.define("hookd-portal", HookdPortal);
})();
