// Package flowcontrol is a cell's admission control between Pick and
// Execute: when the pods a request may go to are saturated, it waits in a
// bounded queue instead of piling onto the engines, and leaves it in an
// order that is strict between priority bands and fair between tenants
// within a band.
//
// Draft: the model is described in full once the controller lands.
package flowcontrol
