package access

const admissionGroup = "admissionregistration.k8s.io"

// GuardInstall is what guard install needs: apply the policy and its
// binding, and create a Node in a server-side dry run to see the API server
// enforce them.
func GuardInstall() []Need {
	return []Need{
		{Verbs: []string{"get", "create", "patch"}, Group: admissionGroup, Resource: "validatingadmissionpolicies"},
		{Verbs: []string{"get", "create", "patch"}, Group: admissionGroup, Resource: "validatingadmissionpolicybindings"},
		{Verbs: []string{"create"}, Resource: "nodes"},
	}
}

// GuardStatus is what guard status needs: read the two and the node labels.
func GuardStatus() []Need {
	return []Need{
		{Verbs: []string{"get"}, Group: admissionGroup, Resource: "validatingadmissionpolicies"},
		{Verbs: []string{"get"}, Group: admissionGroup, Resource: "validatingadmissionpolicybindings"},
		{Verbs: []string{"list"}, Resource: "nodes"},
	}
}

// GuardUninstall is what guard uninstall needs.
func GuardUninstall() []Need {
	return []Need{
		{Verbs: []string{"get", "delete"}, Group: admissionGroup, Resource: "validatingadmissionpolicies"},
		{Verbs: []string{"get", "delete"}, Group: admissionGroup, Resource: "validatingadmissionpolicybindings"},
	}
}
