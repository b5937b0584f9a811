// Shows the one-line summary of "Check Quantized Model" on the node after it ran.
import { app } from "../../scripts/app.js";

app.registerExtension({
  name: "quantcheck.CheckQuantizedModel",
  async beforeRegisterNodeDef(nodeType, nodeData) {
    if (nodeData.name !== "QuantcheckCheckModel") return;
    const onExecuted = nodeType.prototype.onExecuted;
    nodeType.prototype.onExecuted = function (message) {
      onExecuted?.apply(this, arguments);
      const text = (message?.text ?? []).join("\n");
      let widget = this.widgets?.find((w) => w.name === "quantcheck_summary");
      if (!widget) {
        widget = this.addWidget("text", "quantcheck_summary", "", () => {}, { serialize: false });
      }
      widget.value = text;
      this.setDirtyCanvas(true, true);
    };
  },
});
