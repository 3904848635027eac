/*
 * The anywidget front end, as a static page needs it: nbeval's documentation site shows the tutorials'
 * widgets through @jupyter-widgets/html-manager with no kernel and no network, and Altair's offline
 * JupyterChart is an anywidget. This defines the AMD module "anywidget" (AnyModel, AnyView) that the
 * widget manager asks require.js for, so it never falls back to a CDN.
 *
 * A view imports the widget's ES module (the file named by the state's `_esm_file`, which the site's
 * build shares between identical scripts, or the inline `_esm`), then calls its `initialize` and
 * `render` as anywidget does. With no kernel, nothing is sent back: `save_changes` and `send` do nothing.
 */
(function () {
  "use strict";
  // The folder this script was served from (the site's _static), read while the script runs.
  var staticBase = new URL(".", document.currentScript.src).href;
  var modules = new Map();
  // The manager's bundle finds its fonts (Font Awesome, for widget icons) beside the module that
  // asks for them; a named module served from no path would look beside the page instead.
  var vendor = staticBase + "vendor/html-manager-1.0.15";
  require.config({ paths: { "@jupyter-widgets": vendor, "@jupyter-widgets/html-manager/dist": vendor } });
  var styles = new Set();

  function importScript(file, inline) {
    if (file) {
      var url = new URL(file, staticBase).href;
      if (!modules.has(url)) modules.set(url, import(url));
      return modules.get(url);
    }
    var blob = URL.createObjectURL(new Blob([inline || ""], { type: "text/javascript" }));
    return import(blob);
  }

  function addStyle(css) {
    if (!css || styles.has(css)) return;
    styles.add(css);
    var style = document.createElement("style");
    style.textContent = css;
    document.head.appendChild(style);
  }

  define("anywidget", ["@jupyter-widgets/base"], function (base) {
    class AnyModel extends base.DOMWidgetModel {}

    class AnyView extends base.DOMWidgetView {
      render() {
        this.shown = this.show();
        return this.shown;
      }

      async show() {
        var backbone = this.model;
        addStyle(backbone.get("_css"));
        var module = await importScript(backbone.get("_esm_file"), backbone.get("_esm"));
        var widget = module.default !== undefined ? module.default : module;
        if (typeof widget === "function") widget = await widget();
        var model = {
          get: function (name) { return backbone.get(name); },
          set: function (name, value) { backbone.set(name, value); },
          on: function (event, callback) { backbone.on(event, callback); },
          off: function (event, callback) { backbone.off(event, callback); },
          save_changes: function () {},
          send: function () {},
          widget_manager: backbone.widget_manager,
        };
        if (typeof widget.initialize === "function") await widget.initialize({ model: model });
        if (typeof widget.render === "function") this.cleanup = await widget.render({ model: model, el: this.el });
      }

      remove() {
        if (typeof this.cleanup === "function") this.cleanup();
        return super.remove();
      }
    }

    return { AnyModel: AnyModel, AnyView: AnyView };
  });
})();
